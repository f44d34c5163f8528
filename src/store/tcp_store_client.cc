#include "store/tcp_store_client.h"

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

// Milliseconds left until `until` for poll(), rounded up so that a wait does not end early; 0 when past.
int poll_millis(Clock::time_point until) {
  const auto left = until - Clock::now();
  if (left <= Clock::duration::zero()) return 0;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(left + std::chrono::microseconds(999));
  return static_cast<int>(std::min<int64_t>(ms.count(), 1 << 30));
}

// "'a', 'b'": keys for a message, the first few.
std::string key_list(const std::vector<std::string>& keys) {
  std::string out;
  const size_t shown = std::min<size_t>(keys.size(), 4);
  for (size_t i = 0; i < shown; ++i) out += (i ? ", '" : "'") + keys[i] + "'";
  if (keys.size() > shown) out += " and " + std::to_string(keys.size() - shown) + " more";
  return out;
}

std::string host_port(const std::string& host, int port) {
  const bool v6 = host.find(':') != std::string::npos;
  return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
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

Status TcpStoreClient::connect(const std::string& host, int port, const std::string& token,
                               Clock::time_point deadline, std::unique_ptr<TcpStoreClient>* out) {
  const std::string where = host_port(host, port);
  if (port <= 0 || port > 65535) {
    return Status::InvalidArgument("store address " + where + ": the port must be 1-65535");
  }
  if (token.size() > tcp_store::kMaxTokenBytes) {
    return Status::InvalidArgument("store token for " + where + ": longer than " +
                                   std::to_string(tcp_store::kMaxTokenBytes) + " bytes");
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
      std::unique_ptr<TcpStoreClient> client(new TcpStoreClient(fd, where));
      Status s = client->handshake(token, deadline);
      if (!s.ok()) return s;
      *out = std::move(client);
      return Status::OK();
    }
    // Nobody listens yet (rank 0 still starting) or the network is not there yet: try again shortly.
    const Clock::time_point now = Clock::now();
    if (now >= deadline) break;
    const auto pause = std::min<Clock::duration>(backoff + std::chrono::milliseconds(jitter() % 20), deadline - now);
    std::this_thread::sleep_for(pause);
    backoff = std::min(backoff * 2, std::chrono::milliseconds(1000));
  }
  return Status::Timeout("could not connect to the store at " + where + " within " +
                         seconds_text(seconds_between(start, Clock::now())) + " (" + std::to_string(tries) +
                         " tries, last: " + last_error +
                         "): is rank 0 (or torchrun's agent) up and serving on that address and port?");
}

TcpStoreClient::~TcpStoreClient() {
  if (fd_ >= 0) ::close(fd_);
}

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
  Status s = send_all(hello, deadline, "the handshake");
  int64_t count = 0;
  if (s.ok()) s = recv_i64(&count, deadline, "the handshake");
  if (s.code() == StatusCode::kAborted) {
    return Status::Aborted(
        "the store at " + where_ + " closed the connection during the handshake: " +
        (token.empty() ? std::string("it wants a token (a kolo store of another job?), or it is not a TCPStore of "
                                     "torch 2.x or kolo")
                       : std::string("it refused this job's token (a kolo store of another job, or torch's own "
                                     "TCPStore, which takes no token?)")));
  }
  if (s.code() == StatusCode::kTimeout) {
    return Status::Timeout("the store at " + where_ + " did not answer the handshake by the connect deadline: " +
                           "is a TCPStore (kolo's, or torch 2.x's) serving on that port?");
  }
  if (!s.ok()) return s;
  if (count < 0) {
    return Status::Internal("the store at " + where_ + " answered the handshake with " + std::to_string(count) +
                            " keys: is it a TCPStore of torch 2.x or kolo?");
  }
  return Status::OK();
}

Status TcpStoreClient::send_all(const std::string& bytes, Clock::time_point until, const std::string& what) {
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
      return Status::Timeout("the store at " + where_ + " took nothing of " + what +
                             " before its time ran out: the server is stuck or the network is down");
    }
  }
  return Status::OK();
}

Status TcpStoreClient::recv_exact(char* buffer, size_t n, Clock::time_point until, const std::string& what) {
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

Status TcpStoreClient::recv_u8(uint8_t* value, Clock::time_point until, const std::string& what) {
  char c = 0;
  Status s = recv_exact(&c, 1, until, what);
  *value = static_cast<uint8_t>(c);
  return s;
}

Status TcpStoreClient::recv_i64(int64_t* value, Clock::time_point until, const std::string& what) {
  char b[8];
  Status s = recv_exact(b, sizeof b, until, what);
  if (s.ok()) *value = tcp_store::get_i64(b);
  return s;
}

Status TcpStoreClient::recv_bytes(std::string* value, Clock::time_point until, const std::string& what) {
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
  return Status::Aborted(what + " on the store at " + where_ + ": this connection failed earlier (" + broken_ +
                         "); connect a new client");
}

Status TcpStoreClient::check_key(const std::string& key, const std::string& what) const {
  if (key.size() + sizeof(kKeyPrefix) - 1 <= tcp_store::kMaxKeyBytes) return Status::OK();
  return Status::InvalidArgument(what + " on the store at " + where_ + ": a key of " + std::to_string(key.size()) +
                                 " bytes; the store takes keys of up to " +
                                 std::to_string(tcp_store::kMaxKeyBytes - 1) + " bytes");
}

Status TcpStoreClient::check_value(const std::string& value, const std::string& what) const {
  if (value.size() <= tcp_store::kMaxValueBytes) return Status::OK();
  return Status::InvalidArgument(what + " on the store at " + where_ + ": a value of " +
                                 std::to_string(value.size()) + " bytes; the store takes values of up to " +
                                 std::to_string(tcp_store::kMaxValueBytes) + " bytes");
}

Status TcpStoreClient::request(const std::string& request, const std::string& what) {
  return broken(send_all(request, reply_deadline(), what));
}

Status TcpStoreClient::wait_locked(const std::vector<std::string>& keys, Clock::time_point deadline,
                                   const std::string& what) {
  if (keys.size() > tcp_store::kMaxKeysPerQuery) {
    return Status::InvalidArgument(what + " on the store at " + where_ + ": " + std::to_string(keys.size()) +
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
  s = recv_u8(&reply, deadline, what);
  if (s.ok()) {
    if (reply == static_cast<uint8_t>(tcp_store::WaitReply::kStopWaiting)) return Status::OK();
    return broken(Status::Internal("the store at " + where_ + " answered " + what + " with " +
                                   std::to_string(reply) + ", not STOP_WAITING"));
  }
  if (s.code() != StatusCode::kTimeout) return broken(s);
  // The deadline passed: take the wait back on the server, as torch's client does, so that no late
  // STOP_WAITING is left on the connection. The server may have released it just before: then
  // STOP_WAITING comes first, WAIT_CANCELED after.
  s = request(tcp_store::encode_bare(QueryType::kCancelWait), what + "'s cancellation");
  if (s.ok()) s = broken(recv_u8(&reply, reply_deadline(), what + "'s cancellation"));
  if (s.ok() && reply == static_cast<uint8_t>(tcp_store::WaitReply::kStopWaiting)) {
    s = broken(recv_u8(&reply, reply_deadline(), what + "'s cancellation"));
  }
  if (s.ok() && reply != static_cast<uint8_t>(tcp_store::WaitReply::kWaitCanceled)) {
    s = broken(Status::Internal("the store at " + where_ + " answered CANCEL_WAIT with " + std::to_string(reply)));
  }
  if (!s.ok()) return s;
  return Status::Timeout(what + ": waited " + seconds_text(seconds_between(start, Clock::now())) + " for key(s) " +
                         key_list(keys) + " in the store at " + where_ +
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
  if (s.ok()) s = broken(recv_bytes(value, reply_deadline(), what));
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
  for (size_t i = 0; s.ok() && i < keys.size(); ++i) s = broken(recv_bytes(&(*values)[i], reply_deadline(), what));
  return s;
}

Status TcpStoreClient::multi_set(const std::vector<std::string>& keys, const std::vector<std::string>& values) {
  const std::string what = "multi_set(" + key_list(keys) + ")";
  std::lock_guard<std::mutex> lock(mu_);
  Status s = usable(what);
  if (s.ok() && keys.size() != values.size()) {
    s = Status::InvalidArgument(what + " on the store at " + where_ + ": " + std::to_string(keys.size()) +
                                " keys but " + std::to_string(values.size()) + " values");
  }
  if (s.ok() && keys.size() > tcp_store::kMaxKeysPerQuery) {
    s = Status::InvalidArgument(what + " on the store at " + where_ + ": more keys than the store takes at once (" +
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
  if (s.ok()) s = broken(recv_bytes(current, reply_deadline(), what));
  return s;
}

Status TcpStoreClient::add(const std::string& key, int64_t delta, int64_t* result) {
  const std::string what = "add('" + key + "', " + std::to_string(delta) + ")";
  std::lock_guard<std::mutex> lock(mu_);
  Status s = usable(what);
  if (s.ok()) s = check_key(key, what);
  if (s.ok()) s = request(tcp_store::encode_add(wire_key(key), delta), what);
  if (s.ok()) {
    s = recv_i64(result, reply_deadline(), what);
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
    s = Status::InvalidArgument(what + " on the store at " + where_ + ": more keys than the store takes at once (" +
                                std::to_string(tcp_store::kMaxKeysPerQuery) + ")");
  }
  for (size_t i = 0; s.ok() && i < keys.size(); ++i) s = check_key(keys[i], what);
  if (s.ok()) s = request(tcp_store::encode_keys(QueryType::kCheck, wire_keys(keys)), what);
  uint8_t reply = 0;
  if (s.ok()) s = broken(recv_u8(&reply, reply_deadline(), what));
  if (!s.ok()) return s;
  if (reply == static_cast<uint8_t>(tcp_store::CheckReply::kReady)) {
    *all_present = true;
  } else if (reply == static_cast<uint8_t>(tcp_store::CheckReply::kNotReady)) {
    *all_present = false;
  } else {
    return broken(Status::Internal("the store at " + where_ + " answered " + what + " with " +
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
  if (s.ok()) s = broken(recv_i64(&count, reply_deadline(), what));
  if (s.ok() && deleted != nullptr) *deleted = count == 1;
  return s;
}

Status TcpStoreClient::num_keys(int64_t* count) {
  const std::string what = "num_keys()";
  std::lock_guard<std::mutex> lock(mu_);
  Status s = usable(what);
  if (s.ok()) s = request(tcp_store::encode_bare(QueryType::kGetNumKeys), what);
  if (s.ok()) s = broken(recv_i64(count, reply_deadline(), what));
  return s;
}

Status TcpStoreClient::ping() {
  const std::string what = "ping()";
  std::lock_guard<std::mutex> lock(mu_);
  Status s = usable(what);
  const uint32_t nonce = static_cast<uint32_t>(std::random_device{}());
  if (s.ok()) s = request(tcp_store::encode_ping(nonce), what);
  char echo[4];
  if (s.ok()) s = broken(recv_exact(echo, sizeof echo, reply_deadline(), what));
  if (s.ok() && tcp_store::get_u32(echo) != nonce) {
    s = broken(Status::Internal("the store at " + where_ + " answered PING with another number"));
  }
  return s;
}

}  // namespace kolo
