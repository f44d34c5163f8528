// What the store's tests share (tcp_store_test.cc, tcp_store_token_test.cc): servers and clients on the
// loopback, a port nobody serves, and a raw socket that sends a server bytes as a given client would.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "store/tcp_store_client.h"
#include "store/tcp_store_server.h"
#include "store/tcp_store_wire.h"

namespace kolo {
namespace store_test {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using tcp_store::QueryType;

inline Clock::time_point in(milliseconds d) { return Clock::now() + d; }

inline double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

inline std::string where(int port) { return "127.0.0.1:" + std::to_string(port); }

inline std::unique_ptr<TcpStoreServer> serve(const std::string& token = "",
                                      TcpStoreServer::Options options = TcpStoreServer::Options()) {
  std::unique_ptr<TcpStoreServer> server;
  const Status s = TcpStoreServer::start("127.0.0.1", 0, token, options, &server);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return server;
}

inline std::unique_ptr<TcpStoreClient> connect_to(int port, const std::string& token = "") {
  std::unique_ptr<TcpStoreClient> client;
  const Status s = TcpStoreClient::connect("127.0.0.1", port, token, in(milliseconds(5000)), &client);
  EXPECT_TRUE(s.ok()) << s.to_string();
  return client;
}

// A port nobody listens on (bound, then let go).
inline int unused_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t length = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &length);
  ::close(fd);
  return ntohs(a.sin_port);
}

// A plain socket to the server, to send it bytes as a given client would.
class Raw {
 public:
  explicit Raw(int port) {
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(static_cast<uint16_t>(port));
    EXPECT_EQ(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    const int one = 1;
    ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  }
  ~Raw() { ::close(fd_); }

  void send(const std::string& bytes) { ASSERT_EQ(::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), ssize_t(bytes.size())); }
  // Exactly n bytes within `timeout`; fewer where the connection closed or time ran out.
  std::string recv(size_t n, milliseconds timeout = milliseconds(3000)) {
    std::string out;
    const auto until = in(timeout);
    while (out.size() < n) {
      pollfd p{fd_, POLLIN, 0};
      const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now()).count();
      if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) break;
      char b[4096];
      const ssize_t r = ::recv(fd_, b, std::min(sizeof b, n - out.size()), 0);
      if (r <= 0) break;
      out.append(b, static_cast<size_t>(r));
    }
    return out;
  }
  // Whether the server closed the connection within `timeout` (reads and drops anything before the close).
  bool closed_by_server(milliseconds timeout = milliseconds(3000)) {
    const auto until = in(timeout);
    while (Clock::now() < until) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      char b[256];
      const ssize_t r = ::recv(fd_, b, sizeof b, 0);
      if (r == 0 || (r < 0 && errno == ECONNRESET)) return true;
    }
    return false;
  }
  int fd() const { return fd_; }

 private:
  int fd_ = -1;
};

inline std::string hex(const std::string& bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

inline std::string u64_bytes(uint64_t v) {
  std::string out;
  tcp_store::put_u64(&out, v);
  return out;
}

}  // namespace store_test
}  // namespace kolo
