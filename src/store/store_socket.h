// The client's side of a TCP connection to a store: connecting (retried while nobody listens yet, up to a
// deadline), and sending and receiving exactly so many bytes by a deadline, each failure a Status that names
// the store's host:port and what was being sent or awaited. What the bytes mean is the client's
// (tcp_store_client.h).
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "kolo/status.h"

namespace kolo {

class StoreSocket {
 public:
  using Clock = std::chrono::steady_clock;

  // Connects to host:port, retrying while the connection is refused (the server not up yet) until
  // `deadline`.
  static Status connect(const std::string& host, int port, Clock::time_point deadline,
                        std::unique_ptr<StoreSocket>* out);
  ~StoreSocket();
  StoreSocket(const StoreSocket&) = delete;
  StoreSocket& operator=(const StoreSocket&) = delete;

  const std::string& where() const { return where_; }
  // `what` names the request in messages. A closed connection is Aborted, a deadline passed Timeout.
  Status send_all(const std::string& bytes, Clock::time_point until, const std::string& what);
  Status recv_exact(char* buffer, size_t n, Clock::time_point until, const std::string& what);
  Status recv_u8(uint8_t* value, Clock::time_point until, const std::string& what);
  Status recv_i64(int64_t* value, Clock::time_point until, const std::string& what);
  // A length-prefixed value (refused past the store's largest).
  Status recv_bytes(std::string* value, Clock::time_point until, const std::string& what);

 private:
  StoreSocket(int fd, std::string where) : fd_(fd), where_(std::move(where)) {}
  int fd_ = -1;
  std::string where_;
};

}  // namespace kolo
