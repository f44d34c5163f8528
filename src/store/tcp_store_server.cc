#include "store/tcp_store_server.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "store/listening_socket.h"
#include "store/store_table.h"
#include "store/tcp_store_wire.h"

namespace kolo {
namespace {

using Clock = std::chrono::steady_clock;
using tcp_store::ParseResult;
using tcp_store::QueryType;
using tcp_store::Request;

// A connection that does not read its replies stops being read past this much unsent output.
constexpr size_t kMostPendingOutput = 64u << 20;
// Bytes a connection may send ahead of finishing its handshake; they wait, unread, until it has.
constexpr size_t kMostBytesBeforeHandshake = 64u << 10;
// How long the listening socket rests when the process is out of descriptors (accept fails, and poll
// would say it is readable at once, again and again).
constexpr std::chrono::milliseconds kAcceptRest{100};

// Equal, in a time that does not depend on where the two differ (a stranger learns nothing from timing).
bool same_token(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

// A client's connection as the serving thread keeps it.
struct Connection {
  enum class Stage { kValidate, kToken, kReady };
  int fd = -1;
  Stage stage = Stage::kValidate;
  Clock::time_point handshake_deadline;
  std::string in;   // received, not yet served
  size_t need = 1;  // bytes `in` must hold before parsing is worth another try
  std::string out;  // replies not yet sent
  bool closed = false;
};

// The serving thread's state: the table, the connections, and the poll loop over them.
class ServeLoop {
 public:
  ServeLoop(int listen_fd, int wake_fd, const std::string& token, std::chrono::milliseconds handshake_timeout,
            std::atomic<uint64_t>* refused, std::atomic<uint64_t>* open)
      : listen_fd_(listen_fd), wake_fd_(wake_fd), token_(token), handshake_timeout_(handshake_timeout),
        refused_(refused), open_(open) {}

  ~ServeLoop() {
    for (auto& entry : connections_) ::close(entry.second.fd);
    open_->store(0);
  }

  void run() {
    std::vector<pollfd> fds;
    std::vector<uint64_t> ids;  // fds[i + 2] is connection ids[i]
    while (true) {
      const Clock::time_point now = Clock::now();
      const bool listening = now >= accept_rest_until_;
      fds.clear();
      ids.clear();
      fds.push_back({wake_fd_, POLLIN, 0});
      fds.push_back({listening ? listen_fd_ : -1, POLLIN, 0});
      Clock::time_point next = listening ? Clock::time_point::max() : accept_rest_until_;
      for (auto& entry : connections_) {
        Connection& c = entry.second;
        short events = 0;
        if (c.out.size() < kMostPendingOutput) events |= POLLIN;
        if (!c.out.empty()) events |= POLLOUT;
        fds.push_back({c.fd, events, 0});
        ids.push_back(entry.first);
        if (c.stage != Connection::Stage::kReady) next = std::min(next, c.handshake_deadline);
      }
      int timeout_ms = -1;
      if (next != Clock::time_point::max()) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count() + 1;
        timeout_ms = static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left, 1 << 30)));
      }
      const int ready = ::poll(fds.data(), fds.size(), timeout_ms);
      if (ready < 0 && errno != EINTR) return;  // cannot happen with valid descriptors; stop serving
      if (fds[0].revents != 0) return;          // stop()
      if (ready > 0) {
        if (fds[1].revents != 0) accept_all();
        for (size_t i = 2; i < fds.size(); ++i) {
          if (fds[i].revents == 0) continue;
          auto it = connections_.find(ids[i - 2]);
          if (it == connections_.end() || it->second.closed) continue;
          if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) read_from(it->first, &it->second);
          if (!it->second.closed && (fds[i].revents & POLLOUT)) flush(&it->second);
        }
      }
      expire_handshakes();
      sweep();
    }
  }

 private:
  void accept_all() {
    while (true) {
      const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          accept_rest_until_ = Clock::now() + kAcceptRest;
        }
        return;  // EAGAIN: none left
      }
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      Connection c;
      c.fd = fd;
      c.handshake_deadline = Clock::now() + handshake_timeout_;
      connections_.emplace(next_id_++, std::move(c));
      open_->fetch_add(1);
    }
  }

  void read_from(uint64_t id, Connection* c) {
    char buffer[64 * 1024];
    while (c->out.size() < kMostPendingOutput) {
      const ssize_t n = ::recv(c->fd, buffer, sizeof buffer, 0);
      if (n > 0) {
        c->in.append(buffer, static_cast<size_t>(n));
        if (c->stage != Connection::Stage::kReady && c->in.size() > kMostBytesBeforeHandshake) {
          refuse(c);
          return;
        }
        serve_requests(id, c);
        if (c->closed) return;
        if (static_cast<size_t>(n) < sizeof buffer) break;  // likely drained; poll says when there is more
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      close(c);  // the client closed, or the connection failed
      return;
    }
    if (!c->out.empty()) flush(c);
    flush_released();
  }

  // Serves every whole request at the front of the connection's input.
  void serve_requests(uint64_t id, Connection* c) {
    size_t at = 0;
    Request request;
    while (!c->closed && c->in.size() - at >= c->need) {
      const char* data = c->in.data() + at;
      const size_t size = c->in.size() - at;
      // Before the handshake ends, the type byte alone decides: a stranger's request is not even parsed.
      if (c->stage == Connection::Stage::kValidate && static_cast<uint8_t>(data[0]) != uint8_t(QueryType::kValidate)) {
        refuse(c);
        break;
      }
      if (c->stage == Connection::Stage::kToken && static_cast<uint8_t>(data[0]) != uint8_t(QueryType::kKoloToken)) {
        refuse(c);
        break;
      }
      size_t consumed = 0;
      size_t need = 0;
      std::string why;
      const ParseResult parsed = tcp_store::parse_request(data, size, &request, &consumed, &need, &why);
      if (parsed == ParseResult::kNeedMore) {
        c->need = need;
        break;
      }
      if (parsed == ParseResult::kMalformed) {
        if (c->stage == Connection::Stage::kReady) {
          close(c);
        } else {
          refuse(c);
        }
        break;
      }
      at += consumed;
      c->need = 1;
      serve_one(id, c, request);
    }
    if (!c->closed) c->in.erase(0, at);
  }

  void serve_one(uint64_t id, Connection* c, const Request& request) {
    switch (c->stage) {
      case Connection::Stage::kValidate:
        if (request.word != tcp_store::kValidationMagic) {
          refuse(c);
          return;
        }
        c->stage = token_.empty() ? Connection::Stage::kReady : Connection::Stage::kToken;
        return;
      case Connection::Stage::kToken:
        if (!same_token(request.keys[0], token_)) {
          refuse(c);
          return;
        }
        c->stage = Connection::Stage::kReady;
        return;
      case Connection::Stage::kReady:
        break;
    }
    replies_.clear();
    if (!table_.handle(id, request, &replies_)) {
      close(c);
      return;
    }
    for (auto& reply : replies_) {
      auto it = connections_.find(reply.first);
      if (it == connections_.end() || it->second.closed) continue;
      it->second.out += reply.second;
      if (reply.first != id) pending_flush_.push_back(reply.first);
    }
  }

  // Sends what it can of a connection's output now; the rest when poll says the socket takes more.
  void flush(Connection* c) {
    size_t sent = 0;
    while (sent < c->out.size()) {
      const ssize_t n = ::send(c->fd, c->out.data() + sent, c->out.size() - sent, MSG_NOSIGNAL);
      if (n > 0) {
        sent += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      close(c);
      return;
    }
    c->out.erase(0, sent);
  }

  // Output made for other connections (waiters released) goes out at once rather than at the next poll.
  void flush_released() {
    for (uint64_t id : pending_flush_) {
      auto it = connections_.find(id);
      if (it != connections_.end() && !it->second.closed && !it->second.out.empty()) flush(&it->second);
    }
    pending_flush_.clear();
  }

  void expire_handshakes() {
    const Clock::time_point now = Clock::now();
    for (auto& entry : connections_) {
      Connection& c = entry.second;
      if (!c.closed && c.stage != Connection::Stage::kReady && now >= c.handshake_deadline) refuse(&c);
    }
  }

  void refuse(Connection* c) {
    refused_->fetch_add(1);
    close(c);
  }

  void close(Connection* c) {
    if (c->closed) return;
    c->closed = true;
    ::close(c->fd);
    c->in.clear();
    c->out.clear();
  }

  // Drops closed connections and their waits.
  void sweep() {
    for (auto it = connections_.begin(); it != connections_.end();) {
      if (!it->second.closed) {
        ++it;
        continue;
      }
      table_.closed(it->first);
      it = connections_.erase(it);
      open_->fetch_sub(1);
    }
  }

  const int listen_fd_;
  const int wake_fd_;
  const std::string token_;
  const std::chrono::milliseconds handshake_timeout_;
  std::atomic<uint64_t>* refused_;
  std::atomic<uint64_t>* open_;
  StoreTable table_;
  std::unordered_map<uint64_t, Connection> connections_;
  uint64_t next_id_ = 1;
  Clock::time_point accept_rest_until_{};
  StoreTable::Replies replies_;
  std::vector<uint64_t> pending_flush_;
};

}  // namespace

Status TcpStoreServer::start(const std::string& bind_address, int port, const std::string& token,
                             std::unique_ptr<TcpStoreServer>* out) {
  return start(bind_address, port, token, Options(), out);
}

Status TcpStoreServer::start(const std::string& bind_address, int port, const std::string& token,
                             const Options& options, std::unique_ptr<TcpStoreServer>* out) {
  const std::string asked = host_port(bind_address, port);
  if (bind_address.empty()) {
    return Status::InvalidArgument("store server: no address to bind (give this host's address, or 0.0.0.0 for "
                                   "every interface)");
  }
  if (port < 0 || port > 65535) {
    return Status::InvalidArgument("store server on " + asked + ": the port must be 0-65535");
  }
  if (token.size() > tcp_store::kMaxTokenBytes) {
    return Status::InvalidArgument("store server on " + asked + ": a token longer than " +
                                   std::to_string(tcp_store::kMaxTokenBytes) + " bytes");
  }
  int listen_fd = -1, bound_port = 0;
  Status listening = listen_tcp(bind_address, port, &listen_fd, &bound_port);
  if (!listening.ok()) return listening;
  const int wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd < 0) {
    const std::string why = std::strerror(errno);
    ::close(listen_fd);
    return Status::Internal("store server on " + asked + ": eventfd: " + why);
  }
  out->reset(new TcpStoreServer(listen_fd, wake_fd, bound_port, host_port(bind_address, bound_port), token, options));
  return Status::OK();
}

TcpStoreServer::TcpStoreServer(int listen_fd, int wake_fd, int port, std::string where, std::string token,
                               Options options)
    : listen_fd_(listen_fd), wake_fd_(wake_fd), port_(port), where_(std::move(where)), token_(std::move(token)),
      options_(options) {
  thread_ = std::thread([this] { serve(); });
}

TcpStoreServer::~TcpStoreServer() { stop(); }

void TcpStoreServer::serve() {
  ServeLoop loop(listen_fd_, wake_fd_, token_, options_.handshake_timeout, &refused_, &connections_);
  loop.run();
}

void TcpStoreServer::stop() {
  std::lock_guard<std::mutex> lock(stop_mu_);
  if (!thread_.joinable()) return;
  const uint64_t one = 1;
  ssize_t written;
  do {
    written = ::write(wake_fd_, &one, sizeof one);
  } while (written < 0 && errno == EINTR);
  thread_.join();  // the loop's end closes every connection
  ::close(listen_fd_);
  ::close(wake_fd_);
  listen_fd_ = -1;
  wake_fd_ = -1;
}

}  // namespace kolo
