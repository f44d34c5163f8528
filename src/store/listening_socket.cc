#include "store/listening_socket.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>

namespace kolo {

std::string host_port(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

Status listen_tcp(const std::string& bind_address, int port, int* fd_out, int* bound_port_out) {
  const std::string asked = host_port(bind_address, port);
  int listen_fd = -1;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* addresses = nullptr;
  const int resolved = ::getaddrinfo(bind_address.c_str(), std::to_string(port).c_str(), &hints, &addresses);
  if (resolved != 0) {
    return Status::InvalidArgument("store server on " + asked + ": cannot resolve '" + bind_address +
                                   "': " + gai_strerror(resolved));
  }
  std::string error = "no address";
  for (const addrinfo* a = addresses; a != nullptr && listen_fd < 0; a = a->ai_next) {
    const int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) {
      error = std::strerror(errno);
      continue;
    }
    const int one = 1;
    // A restarted job binds its port again while the last one's connections linger in TIME_WAIT.
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd, SOMAXCONN) != 0) {
      error = std::strerror(errno);
      ::close(fd);
      continue;
    }
    listen_fd = fd;
  }
  ::freeaddrinfo(addresses);
  if (listen_fd < 0) {
    return Status::Internal("cannot serve the store on " + asked + ": " + error +
                            (port != 0 ? " (another store, or another job, may hold that port: choose another, "
                                         "or 0 for any)"
                                       : ""));
  }
  sockaddr_storage bound{};
  socklen_t length = sizeof bound;
  ::getsockname(listen_fd, reinterpret_cast<sockaddr*>(&bound), &length);
  const int bound_port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                                     : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  *fd_out = listen_fd;
  *bound_port_out = bound_port;
  return Status::OK();
}

}  // namespace kolo
