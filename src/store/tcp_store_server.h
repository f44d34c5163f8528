// kolo's c10d TCPStore server: rank 0 serves the job's key-value store on MASTER_PORT, and kolo's ranks
// (TcpStoreClient) and a script's own torch code (torch.distributed.TCPStore(is_master=False), then
// init_process_group("gloo", store=...)) rendezvous through it. It answers every query of torch 2.x's
// client as torch's own server does (libuv backend, the default since torch 2.4), WAIT and BARRIER
// included, so torch's client cannot tell the two apart.
//
// One background thread serves every connection with poll(): no thread per client, and a client that
// stops reading or never finishes a request holds up no one else.
//
// Token: where started with a non-empty token (the job's ranks share a random one), a connection must send
// VALIDATE and then kolo's token query (tcp_store_wire.h) as its first two requests; any other start, or
// a wrong token, closes it unread, and a connection that has not finished that handshake in the
// handshake timeout is closed too. Torch's own client sends no token, so a token-protected server refuses
// it: a torch script that is to share the store needs a server without one. With an empty token the
// handshake is torch's alone (VALIDATE).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "kolo/status.h"

namespace kolo {

class TcpStoreServer {
 public:
  struct Options {
    // How long a new connection has to send VALIDATE (and the token) before it is closed.
    std::chrono::milliseconds handshake_timeout{30000};
  };

  // Listens on `bind_address` (an IPv4 or IPv6 address or a host name; "0.0.0.0" for every interface),
  // `port` (0: an ephemeral one, see port()), and serves until stop() or destruction.
  static Status start(const std::string& bind_address, int port, const std::string& token,
                      std::unique_ptr<TcpStoreServer>* out);
  static Status start(const std::string& bind_address, int port, const std::string& token, const Options& options,
                      std::unique_ptr<TcpStoreServer>* out);
  ~TcpStoreServer();  // stop()
  TcpStoreServer(const TcpStoreServer&) = delete;
  TcpStoreServer& operator=(const TcpStoreServer&) = delete;

  // Closes every connection (a client waiting on one sees it closed) and the listening socket, and joins
  // the thread. Idempotent.
  void stop();

  int port() const { return port_; }
  // "address:port", for messages.
  const std::string& where() const { return where_; }
  // Connections closed for a wrong start (no VALIDATE, no or a wrong token, a handshake out of time).
  uint64_t refused() const { return refused_.load(); }
  // Connections open now.
  uint64_t connections() const { return connections_.load(); }

 private:
  TcpStoreServer(int listen_fd, int wake_fd, int port, std::string where, std::string token, Options options);
  void serve();

  int listen_fd_;
  int wake_fd_;  // an eventfd: stop() writes it, the thread's poll() wakes
  int port_;
  std::string where_;
  std::string token_;
  Options options_;
  std::atomic<uint64_t> refused_{0};
  std::atomic<uint64_t> connections_{0};
  std::mutex stop_mu_;
  std::thread thread_;
};

}  // namespace kolo
