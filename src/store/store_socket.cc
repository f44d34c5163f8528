#include "store/store_socket.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <sstream>
#include <thread>

#include "store/listening_socket.h"
#include "store/tcp_store_wire.h"

namespace kolo {
namespace {

using Clock = StoreSocket::Clock;

// Milliseconds left until `until` for poll(), rounded up so that a wait does not end early; 0 when past.
int poll_millis(Clock::time_point until) {
  const auto left = until - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(left + std::chrono::microseconds(999));
  return static_cast<int>(std::min<int64_t>(ms.count(), 1 << 30));
}

// One non-blocking connect to `address`, bounded by `until`; the socket, or -1 with `*error` (an errno).
int connect_once(const addrinfo* address, Clock::time_point until, int* error) {
  const int fd = ::socket(address->ai_family, address->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                          address->ai_protocol);
  if (fd < 0) {
    *error = errno;
    return -1;
  }
  if (::connect(fd, address->ai_addr, address->ai_addrlen) != 0) {
    if (errno != EINPROGRESS) {
      *error = errno;
      ::close(fd);
      return -1;
    }
    pollfd p{fd, POLLOUT, 0};
    int ready = 0;
    do {
      ready = ::poll(&p, 1, poll_millis(until));
    } while (ready < 0 && errno == EINTR);
    int so_error = 0;
    socklen_t length = sizeof so_error;
    if (ready <= 0) {
      so_error = ready == 0 ? ETIMEDOUT : errno;
    } else if (::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &length) != 0) {
      so_error = errno;
    }
    if (so_error != 0) {
      *error = so_error;
      ::close(fd);
      return -1;
    }
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);  // requests are small and wait for replies
  return fd;
}

}  // namespace

Status StoreSocket::connect(const std::string& host, int port, Clock::time_point deadline,
                            std::unique_ptr<StoreSocket>* out) {
  const std::string where = host_port(host, port);
  if (port <= 0 || port > 65535) {
    return Status::InvalidArgument("store address " + where + ": the port must be 1-65535");
  }
  const Clock::time_point start = Clock::now();
  std::string last_error = "no attempt before the deadline";
  auto backoff = std::chrono::milliseconds(20);
  std::minstd_rand jitter(std::random_device{}());
  int tries = 0;
  while (true) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICSERV;
    addrinfo* addresses = nullptr;
    const int resolved = ::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &addresses);
    if (resolved != 0 && resolved != EAI_AGAIN) {
      return Status::InvalidArgument("store address " + where + ": cannot resolve '" + host +
                                     "': " + gai_strerror(resolved));
    }
    int fd = -1;
    if (resolved == 0) {
      for (const addrinfo* a = addresses; a != nullptr && fd < 0; a = a->ai_next) {
        int error = 0;
        ++tries;
        fd = connect_once(a, deadline, &error);
        if (fd < 0) last_error = std::strerror(error);
      }
      ::freeaddrinfo(addresses);
    } else {
      last_error = std::string("cannot resolve '") + host + "' yet: " + gai_strerror(resolved);
    }
    if (fd >= 0) {
      out->reset(new StoreSocket(fd, where));
      return Status::OK();
    }
    // Nobody listens yet (rank 0 still starting) or the network is not there yet: try again shortly.
    const Clock::time_point now = Clock::now();
    if (now >= deadline) break;
    const auto pause = std::min<Clock::duration>(backoff + std::chrono::milliseconds(jitter() % 20), deadline - now);
    std::this_thread::sleep_for(pause);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
  std::ostringstream took;
  took.precision(3);
  took << std::chrono::duration<double>(Clock::now() - start).count() << " s";
  return Status::Timeout("could not connect to the store at " + where + " within " + took.str() + " (" +
                         std::to_string(tries) +
                         " tries, last: " + last_error +
                         "): is rank 0 (or torchrun's agent) up and serving on that address and port?");
}

StoreSocket::~StoreSocket() {
  if (fd_ >= 0) ::close(fd_);
}

Status StoreSocket::send_all(const std::string& bytes, Clock::time_point until, const std::string& what) {
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = ::send(fd_, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
      if (errno == EPIPE || errno == ECONNRESET) {
        return Status::Aborted("the store at " + where_ + " closed the connection before " + what +
                               " was sent: the server stopped (rank 0 gone?)");
      }
      return Status::Internal("sending " + what + " to the store at " + where_ + ": " + std::strerror(errno));
    }
    pollfd p{fd_, POLLOUT, 0};
    const int ready = ::poll(&p, 1, poll_millis(until));
    if (ready < 0 && errno != EINTR) {
      return Status::Internal("waiting to send " + what + " to the store at " + where_ + ": " + std::strerror(errno));
    }
    if (ready == 0) {
      return Status::Timeout("the store at " + where_ + " took nothing of " + what + " in time");
    }
  }
  return Status::OK();
}

Status StoreSocket::recv_exact(char* buffer, size_t n, Clock::time_point until, const std::string& what) {
  size_t got = 0;
  while (got < n) {
    pollfd p{fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, poll_millis(until));
    if (ready < 0) {
      if (errno == EINTR) continue;
      return Status::Internal("waiting for the store at " + where_ + " to answer " + what + ": " +
                              std::strerror(errno));
    }
    if (ready == 0) {
      return Status::Timeout("the store at " + where_ + " did not answer " + what + " in time");
    }
    const ssize_t r = ::recv(fd_, buffer + got, n - got, 0);
    if (r > 0) {
      got += static_cast<size_t>(r);
    } else if (r == 0 || errno == ECONNRESET) {
      return Status::Aborted("the store at " + where_ + " closed the connection during " + what +
                             ": the server stopped (rank 0 gone?) or refused the request");
    } else if (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK) {
      return Status::Internal("reading the store's answer to " + what + " from " + where_ + ": " +
                              std::strerror(errno));
    }
  }
  return Status::OK();
}

Status StoreSocket::recv_u8(uint8_t* value, Clock::time_point until, const std::string& what) {
  char c = 0;
  Status s = recv_exact(&c, 1, until, what);
  *value = static_cast<uint8_t>(c);
  return s;
}

Status StoreSocket::recv_i64(int64_t* value, Clock::time_point until, const std::string& what) {
  char b[8];
  Status s = recv_exact(b, sizeof b, until, what);
  if (s.ok()) *value = tcp_store::get_i64(b);
  return s;
}

Status StoreSocket::recv_bytes(std::string* value, Clock::time_point until, const std::string& what) {
  char b[8];
  Status s = recv_exact(b, sizeof b, until, what);
  if (!s.ok()) return s;
  const uint64_t length = tcp_store::get_u64(b);
  if (length > tcp_store::kMaxValueBytes) {
    return Status::Internal("the store at " + where_ + " answered " + what + " with a value of " +
                            std::to_string(length) + " bytes, more than a store holds: is it a TCPStore?");
  }
  value->resize(static_cast<size_t>(length));
  return length == 0 ? Status::OK() : recv_exact(&(*value)[0], value->size(), until, what);
}

}  // namespace kolo
