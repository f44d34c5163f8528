#include "comm/socket/route.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

namespace kolo {

uint32_t source_address_towards(uint32_t to) {
  const int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 0;
  sockaddr_in peer{};
  peer.sin_family = AF_INET;
  peer.sin_addr.s_addr = to;
  peer.sin_port = htons(9);
  sockaddr_in mine{};
  socklen_t length = sizeof mine;
  const bool ok = ::connect(fd, reinterpret_cast<const sockaddr*>(&peer), sizeof peer) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&mine), &length) == 0;
  ::close(fd);
  return ok ? mine.sin_addr.s_addr : 0;
}

std::string source_address_towards(const std::string& host) {
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(host.c_str(), nullptr, &hints, &found) != 0 || found == nullptr) return "";
  const uint32_t to = reinterpret_cast<const sockaddr_in*>(found->ai_addr)->sin_addr.s_addr;
  ::freeaddrinfo(found);
  const uint32_t from = source_address_towards(to);
  if (from == 0) return "";
  char text[INET_ADDRSTRLEN] = {0};
  ::inet_ntop(AF_INET, &from, text, sizeof text);
  return text;
}

}  // namespace kolo
