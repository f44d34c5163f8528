// A TCP socket listening on an address (a host name, an IPv4 or IPv6 address; "0.0.0.0" for every
// interface) and port (0: an ephemeral one), non-blocking and closed on exec: what kolo's store server
// (tcp_store_server.h) accepts its connections on.
#pragma once

#include <string>

#include "kolo/status.h"

namespace kolo {

// *fd: the socket; *bound_port: the port it listens on. Messages name `bind_address`:`port`.
Status listen_tcp(const std::string& bind_address, int port, int* fd, int* bound_port);
// "host:port" ("[host]:port" for IPv6), for messages.
std::string host_port(const std::string& host, int port);

}  // namespace kolo
