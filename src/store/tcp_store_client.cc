#include "store/tcp_store_client.h"

#include "store/listening_socket.h"

#include <errno.h>
#include <fcntl.h>
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

namespace kolo {
namespace {

using Clock = KeyValueStore::Clock;
using tcp_store::QueryType;

// torch's client puts this before every key it is given (TCPStore::keyPrefix_); kolo's does the same so
// that both kinds of client meet on the same keys.
const char kKeyPrefix[] = "/";

std::string wire_key(const std::string& key) { return kKeyPrefix + key; }

std::vector<std::string> wire_keys(const std::vector<std::string>& keys) {
  std::vector<std::string> out;
  out.reserve(keys.size());
  for (const std::string& key : keys) out.push_back(wire_key(key));
  return out;
}

std::string seconds_text(double seconds) {
  std::ostringstream s;
  s.precision(3);
  s << seconds << " s";
  return s.str();
}

double seconds_between(Clock::time_point from, Clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

// "'a', 'b'": keys for a message, the first few.
std::string key_list(const std::vector<std::string>& keys) {
  std::string out;
  const size_t shown = std::min<size_t>(keys.size(), 4);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", '" : "'") + keys[i] + "'";
  if (keys.size() > shown) out += " and " + std::to_string(keys.size() - shown) + " more";
  return out;
}

}  // namespace

Status TcpStoreClient::connect(const std::string& host, int port, const std::string& token,
                               Clock::time_point deadline, std::unique_ptr<TcpStoreClient>* out) {
  if (token.size() > tcp_store::kMaxTokenBytes) {
    return Status::InvalidArgument("store token for " + host_port(host, port) + ": longer than " +
                                   std::to_string(tcp_store::kMaxTokenBytes) + " bytes");
  }
  std::unique_ptr<StoreSocket> socket;
  Status s = StoreSocket::connect(host, port, deadline, &socket);
  if (!s.ok()) return s;
  std::unique_ptr<TcpStoreClient> client(new TcpStoreClient(std::move(socket)));
  s = client->handshake(token, deadline);
  if (!s.ok()) return s;
  *out = std::move(client);
  return Status::OK();
}

TcpStoreClient::~TcpStoreClient() = default;

void TcpStoreClient::set_reply_timeout(std::chrono::milliseconds timeout) {
  std::lock_guard<std::mutex> lock(mu_);
  reply_timeout_ = timeout;
}

Status TcpStoreClient::handshake(const std::string& token, Clock::time_point deadline) {
  // One write for all of it. The round trip is a GETNUMKEYS rather than torch's PING, which torch 2.4's
  // servers do not know (they close the connection on it); every server since VALIDATE answers it.
  std::string hello = tcp_store::encode_validate();
  if (!token.empty()) hello += tcp_store::encode_token(token);
  hello += tcp_store::encode_bare(QueryType::kGetNumKeys);
  Status s = socket_->send_all(hello, deadline, "the handshake");
  int64_t count = 0;
  if (s.ok()) s = socket_->recv_i64(&count, deadline, "the handshake");
  if (s.code() == StatusCode::kAborted) {
    return Status::Aborted(
        "the store at " + where() + " closed the connection during the handshake: " +
        (token.empty() ? std::string("it wants a token (a kolo store of another job?), or it is not a TCPStore of "
                                     "torch 2.x or kolo")
                       : std::string("it refused this job's token (a kolo store of another job, or torch's own "
                                     "TCPStore, which takes no token?)")));
  }
  if (s.code() == StatusCode::kTimeout) {
    return Status::Timeout("the store at " + where() + " did not answer the handshake by the connect deadline: " +
                           "is a TCPStore (kolo's, or torch 2.x's) serving on that port?");
  }
  if (!s.ok()) return s;
  if (count < 0) {
    return Status::Internal("the store at " + where() + " answered the handshake with " + std::to_string(count) +
                            " keys: is it a TCPStore of torch 2.x or kolo?");
  }
  return Status::OK();
}

Status TcpStoreClient::broken(Status status) {
  if (status.ok()) return status;
  if (broken_.empty()) broken_ = status.message();
  if (status.code() == StatusCode::kTimeout) {
    // A call bounded by the reply timeout, not a wait for other ranks: say how long and what it means.
    return Status::Timeout(status.message() + " (reply timeout " +
                           seconds_text(std::chrono::duration<double>(reply_timeout_).count()) +
                           "): the server is stuck or the network is down");
  }
  return status;
}

Status TcpStoreClient::usable(const std::string& what) const {
  if (broken_.empty()) return Status::OK();
  return Status::Aborted(what + " on the store at " + where() + ": this connection failed earlier (" + broken_ +
                         "); connect a new client");
}

Status TcpStoreClient::check_key(const std::string& key, const std::string& what) const {
  if (key.size() + sizeof(kKeyPrefix) - 1 <= tcp_store::kMaxKeyBytes) return Status::OK();
  return Status::InvalidArgument(what + " on the store at " + where() + ": a key of " + std::to_string(key.size()) +
                                 " bytes; the store takes keys of up to " +
                                 std::to_string(tcp_store::kMaxKeyBytes - 1) + " bytes");
}

Status TcpStoreClient::check_value(const std::string& value, const std::string& what) const {
  if (value.size() <= tcp_store::kMaxValueBytes) return Status::OK();
  return Status::InvalidArgument(what + " on the store at " + where() + ": a value of " +
                                 std::to_string(value.size()) + " bytes; the store takes values of up to " +
                                 std::to_string(tcp_store::kMaxValueBytes) + " bytes");
}

Status TcpStoreClient::request(const std::string& request, const std::string& what) {
  return broken(socket_->send_all(request, reply_deadline(), what));
}

Status TcpStoreClient::wait_locked(const std::vector<std::string>& keys, Clock::time_point deadline,
                                   const std::string& what) {
  if (keys.size() > tcp_store::kMaxKeysPerQuery) {
    return Status::InvalidArgument(what + " on the store at " + where() + ": " + std::to_string(keys.size()) +
                                   " keys in one call, more than the store takes (" +
                                   std::to_string(tcp_store::kMaxKeysPerQuery) + ")");
  }
  for (const std::string& key : keys) {
    Status s = check_key(key, what);
    if (!s.ok()) return s;
  }
  const Clock::time_point start = Clock::now();
  Status s = request(tcp_store::encode_keys(QueryType::kWait, wire_keys(keys)), what);
  if (!s.ok()) return s;
  uint8_t reply = 0;
  s = socket_->recv_u8(&reply, deadline, what);
  if (s.ok()) {
    if (reply == static_cast<uint8_t>(tcp_store::WaitReply::kStopWaiting)) return Status::OK();
    return broken(Status::Internal("the store at " + where() + " answered " + what + " with " +
                                   std::to_string(reply) + ", not STOP_WAITING"));
  }
  if (s.code() != StatusCode::kTimeout) return broken(s);
  // The deadline passed: take the wait back on the server, as torch's client does, so that no late
  // STOP_WAITING is left on the connection. The server may have released it just before: then
  // STOP_WAITING comes first, WAIT_CANCELED after.
  s = request(tcp_store::encode_bare(QueryType::kCancelWait), what + "'s cancellation");
  if (s.ok()) s = broken(socket_->recv_u8(&reply, reply_deadline(), what + "'s cancellation"));
  if (s.ok() && reply == static_cast<uint8_t>(tcp_store::WaitReply::kStopWaiting)) {
    s = broken(socket_->recv_u8(&reply, reply_deadline(), what + "'s cancellation"));
  }
  if (s.ok() && reply != static_cast<uint8_t>(tcp_store::WaitReply::kWaitCanceled)) {
    s = broken(Status::Internal("the store at " + where() + " answered CANCEL_WAIT with " + std::to_string(reply)));
  }
  if (!s.ok()) return s;
  return Status::Timeout(what + ": waited " + seconds_text(seconds_between(start, Clock::now())) + " for key(s) " +
                         key_list(keys) + " in the store at " + where() +
                         ", which were not all set by then: did every rank start, and with the same store?");
}

Status TcpStoreClient::set(const std::string& key, const std::string& value) {
  const std::string what = "set('" + key + "')";
  std::lock_guard<std::mutex> lock(mu_);
  Status s = usable(what);
  if (s.ok()) s = check_key(key, what);
  if (s.ok()) s = check_value(value, what);
  if (s.ok()) s = request(tcp_store::encode_key_value(QueryType::kSet, wire_key(key), value), what);
  return s;
}

Status TcpStoreClient::get(const std::string& key, Clock::time_point deadline, std::string* value) {
  const std::string what = "get('" + key + "')";
  std::lock_guard<std::mutex> lock(mu_);
  Status s = usable(what);
  if (s.ok()) s = wait_locked({key}, deadline, what);
  if (s.ok()) s = request(tcp_store::encode_key(QueryType::kGet, wire_key(key)), what);
  if (s.ok()) s = broken(socket_->recv_bytes(value, reply_deadline(), what));
  return s;
}

Status TcpStoreClient::multi_get(const std::vector<std::string>& keys, Clock::time_point deadline,
                                 std::vector<std::string>* values) {
  const std::string what = "multi_get(" + key_list(keys) + ")";
  std::lock_guard<std::mutex> lock(mu_);
  Status s = usable(what);
  if (s.ok()) s = wait_locked(keys, deadline, what);
  if (s.ok()) s = request(tcp_store::encode_keys(QueryType::kMultiGet, wire_keys(keys)), what);
  values->assign(keys.size(), std::string());
  for (size_t i = 0; s.ok() && i < keys.size(); ++i) s = broken(socket_->recv_bytes(&(*values)[i], reply_deadline(), what));
  return s;
}

Status TcpStoreClient::multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  const std::string what = "multi_set(" + key_list(keys) + ")";
  std::lock_guard<std::mutex> lock(mu_);
  Status s = usable(what);
  if (s.ok() && keys.size() != values.size()) {
    s = Status::InvalidArgument(what + " on the store at " + where() + ": " + std::to_string(keys.size()) +
                                " keys but " + std::to_string(values.size()) + " values");
  }
  if (s.ok() && keys.size() > tcp_store::kMaxKeysPerQuery) {
    s = Status::InvalidArgument(what + " on the store at " + where() + ": more keys than the store takes at once (" +
                                std::to_string(tcp_store::kMaxKeysPerQuery) + ")");
  }
  for (size_t i = 0; s.ok() && i < keys.size(); ++i) {
    s = check_key(keys[i], what);
    if (s.ok()) s = check_value(values[i], what);
  }
  if (s.ok()) s = request(tcp_store::encode_multi_set(wire_keys(keys), values), what);
  return s;
}

Status TcpStoreClient::compare_set(const std::string& key, const std::string& expected, const std::string& desired,
                                   std::string* current) {
  const std::string what = "compare_set('" + key + "')";
  std::lock_guard<std::mutex> lock(mu_);
  Status s = usable(what);
  if (s.ok()) s = check_key(key, what);
  if (s.ok()) s = check_value(expected, what);
  if (s.ok()) s = check_value(desired, what);
  if (s.ok()) s = request(tcp_store::encode_compare_set(wire_key(key), expected, desired), what);
  if (s.ok()) s = broken(socket_->recv_bytes(current, reply_deadline(), what));
  return s;
}

Status TcpStoreClient::add(const std::string& key, int64_t delta, int64_t* result) {
  const std::string what = "add('" + key + "', " + std::to_string(delta) + ")";
  std::lock_guard<std::mutex> lock(mu_);
  Status s = usable(what);
  if (s.ok()) s = check_key(key, what);
  if (s.ok()) s = request(tcp_store::encode_add(wire_key(key), delta), what);
  if (s.ok()) {
    s = socket_->recv_i64(result, reply_deadline(), what);
    // Both of torch's servers, and kolo's, drop the connection where the key holds no integer.
    if (s.code() == StatusCode::kAborted) {
      s = Status::Aborted(s.message() + " (does '" + key + "' hold something other than an integer?)");
    }
    s = broken(s);
  }
  return s;
}

Status TcpStoreClient::append(const std::string& key, const std::string& value) {
  const std::string what = "append('" + key + "')";
  std::lock_guard<std::mutex> lock(mu_);
  Status s = usable(what);
  if (s.ok()) s = check_key(key, what);
  if (s.ok()) s = check_value(value, what);
  if (s.ok()) s = request(tcp_store::encode_key_value(QueryType::kAppend, wire_key(key), value), what);
  return s;
}

Status TcpStoreClient::check(const std::vector<std::string>& keys, bool* all_present) {
  const std::string what = "check(" + key_list(keys) + ")";
  std::lock_guard<std::mutex> lock(mu_);
  Status s = usable(what);
  if (s.ok() && keys.size() > tcp_store::kMaxKeysPerQuery) {
    s = Status::InvalidArgument(what + " on the store at " + where() + ": more keys than the store takes at once (" +
                                std::to_string(tcp_store::kMaxKeysPerQuery) + ")");
  }
  for (size_t i = 0; s.ok() && i < keys.size(); ++i) s = check_key(keys[i], what);
  if (s.ok()) s = request(tcp_store::encode_keys(QueryType::kCheck, wire_keys(keys)), what);
  uint8_t reply = 0;
  if (s.ok()) s = broken(socket_->recv_u8(&reply, reply_deadline(), what));
  if (!s.ok()) return s;
  if (reply == static_cast<uint8_t>(tcp_store::CheckReply::kReady)) {
    *all_present = true;
  } else if (reply == static_cast<uint8_t>(tcp_store::CheckReply::kNotReady)) {
    *all_present = false;
  } else {
    return broken(Status::Internal("the store at " + where() + " answered " + what + " with " +
                                   std::to_string(reply) + ", neither READY nor NOT_READY"));
  }
  return Status::OK();
}

Status TcpStoreClient::wait(const std::vector<std::string>& keys, Clock::time_point deadline) {
  const std::string what = "wait(" + key_list(keys) + ")";
  std::lock_guard<std::mutex> lock(mu_);
  Status s = usable(what);
  if (s.ok()) s = wait_locked(keys, deadline, what);
  return s;
}

Status TcpStoreClient::delete_key(const std::string& key, bool* deleted) {
  const std::string what = "delete_key('" + key + "')";
  std::lock_guard<std::mutex> lock(mu_);
  Status s = usable(what);
  if (s.ok()) s = check_key(key, what);
  if (s.ok()) s = request(tcp_store::encode_key(QueryType::kDeleteKey, wire_key(key)), what);
  int64_t count = 0;
  if (s.ok()) s = broken(socket_->recv_i64(&count, reply_deadline(), what));
  if (s.ok() && deleted != nullptr) *deleted = count == 1;
  return s;
}

Status TcpStoreClient::num_keys(int64_t* count) {
  const std::string what = "num_keys()";
  std::lock_guard<std::mutex> lock(mu_);
  Status s = usable(what);
  if (s.ok()) s = request(tcp_store::encode_bare(QueryType::kGetNumKeys), what);
  if (s.ok()) s = broken(socket_->recv_i64(count, reply_deadline(), what));
  return s;
}

Status TcpStoreClient::ping() {
  const std::string what = "ping()";
  std::lock_guard<std::mutex> lock(mu_);
  Status s = usable(what);
  const uint32_t nonce = static_cast<uint32_t>(std::random_device{}());
  if (s.ok()) s = request(tcp_store::encode_ping(nonce), what);
  char echo[4];
  if (s.ok()) s = broken(socket_->recv_exact(echo, sizeof echo, reply_deadline(), what));
  if (s.ok() && tcp_store::get_u32(echo) != nonce) {
    s = broken(Status::Internal("the store at " + where() + " answered PING with another number"));
  }
  return s;
}

}  // namespace kolo
