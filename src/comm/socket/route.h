// Which of this host's addresses its routing sends from towards another host: connecting a UDP socket
// sends nothing, and getsockname then tells. The address a rank publishes for its peers (the doorbell's,
// the Gloo world's connections) is the one they reach it through.
#pragma once

#include <cstdint>
#include <string>

namespace kolo {

// IPv4, network byte order; 0 where there is no route.
uint32_t source_address_towards(uint32_t to);
// The same for a host name or address (IPv4); "" where it does not resolve or has no route.
std::string source_address_towards(const std::string& host);

}  // namespace kolo
