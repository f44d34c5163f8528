// kolo's client of a c10d TCPStore: of kolo's own server (TcpStoreServer, on rank 0) or of torch's, as
// torchrun's agent or torch.distributed.TCPStore(is_master=True) serves it (libuv or classic backend).
//
// It speaks as torch's client does, so that kolo's ranks and a script's torch code share one store: every
// key goes on the wire with torch's "/" in front (a kolo set("x") is a torch get("x")), VALIDATE opens
// the connection (a GETNUMKEYS round trip then shows the server kept it), and a wait that runs out cancels
// itself on the server (CANCEL_WAIT) so the connection stays usable. Where it is given a token it sends kolo's token query
// after VALIDATE, which kolo's server wants where it was started with one (torch's server takes none).
//
// Every call is bounded: the ones that wait for other ranks by their deadline, the others by the reply
// timeout (30 s unless set). A server that stops answering gives Status::Timeout; a connection the server
// closed gives Status::Aborted; either way the message names host:port and the query. After a failure that
// may leave a reply in flight the client refuses further calls (connect a new one).
//
// Thread-safety: calls are serialized by a mutex; a wait holds the connection until it ends, so a thread
// that must not queue behind another's wait uses a client of its own.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "store/key_value_store.h"
#include "store/store_socket.h"
#include "store/tcp_store_wire.h"

namespace kolo {

class TcpStoreClient final : public KeyValueStore {
 public:
  // Connects to host:port, retrying while nobody listens there yet (rank 0 not up: connection refused),
  // until `deadline`; then validates (and presents `token` where it is not empty) and pings.
  static Status connect(const std::string& host, int port, const std::string& token, Clock::time_point deadline,
                        std::unique_ptr<TcpStoreClient>* out);
  ~TcpStoreClient() override;
  TcpStoreClient(const TcpStoreClient&) = delete;
  TcpStoreClient& operator=(const TcpStoreClient&) = delete;

  // The bound on each call that does not wait for other ranks.
  void set_reply_timeout(std::chrono::milliseconds timeout);

  std::string where() const override { return socket_->where(); }

  Status set(const std::string& key, const std::string& value) override;
  Status get(const std::string& key, Clock::time_point deadline, std::string* value) override;
  Status multi_get(const std::vector<std::string>& keys, Clock::time_point deadline,
                   std::vector<std::string>* values) override;
  Status multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values) override;
  Status compare_set(const std::string& key, const std::string& expected, const std::string& desired,
                     std::string* current) override;
  Status add(const std::string& key, int64_t delta, int64_t* result) override;
  Status append(const std::string& key, const std::string& value) override;
  Status check(const std::vector<std::string>& keys, bool* all_present) override;
  Status wait(const std::vector<std::string>& keys, Clock::time_point deadline) override;
  Status delete_key(const std::string& key, bool* deleted) override;
  Status num_keys(int64_t* count) override;
  // A PING round trip, to tell whether the server still answers. Needs a server that knows PING: kolo's or
  // a recent torch's (2.15's does; 2.4's closes the connection on it); num_keys() is a round trip anywhere.
  Status ping();

 private:
  explicit TcpStoreClient(std::unique_ptr<StoreSocket> socket) : socket_(std::move(socket)) {}

  // The connection's handshake: VALIDATE, the token, and a GETNUMKEYS whose answer shows the server kept the
  // connection (a refused token closes it).
  Status handshake(const std::string& token, Clock::time_point deadline);

  // Sends `request` and returns when the server has answered `what`; the reply is read by the caller.
  Status request(const std::string& request, const std::string& what);
  // WAIT for `wire_keys` (already prefixed) until `deadline`, cancelling on the server where it runs out.
  Status wait_locked(const std::vector<std::string>& wire_keys, Clock::time_point deadline, const std::string& what);
  // Refuses calls on a connection that a failure left out of step, or keys and values past the limits.
  Status usable(const std::string& what) const;
  Status check_key(const std::string& key, const std::string& what) const;
  Status check_value(const std::string& value, const std::string& what) const;
  // Records a failure after which the connection cannot be trusted, and returns it.
  Status broken(Status status);
  Clock::time_point reply_deadline() const { return Clock::now() + reply_timeout_; }

  std::mutex mu_;
  std::unique_ptr<StoreSocket> socket_;
  std::chrono::milliseconds reply_timeout_{30000};
  std::string broken_;  // why the connection is unusable; empty while it is fine
};

}  // namespace kolo
