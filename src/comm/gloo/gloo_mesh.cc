#include "comm/gloo/gloo_mesh.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <gloo/common/error.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstring>

#include "comm/give_up.h"
#include "comm/gloo/gloo_store.h"
#include "comm/peer_failure.h"
#include "comm/socket/route.h"
#include "common/logging.h"

namespace kolo {
namespace {

// Waits that only the mesh's breaking ends (see gloo_mesh.h): Gloo's own timeout would close every
// connection.
constexpr std::chrono::milliseconds kForever = std::chrono::hours(24 * 365);
// The mesh's own slots: the identity check's (gloo_group.h's groups use ids below 0xffff).
constexpr uint64_t kIdentitySlot = uint64_t{0xffff} << 16;
constexpr uint32_t kIdentityMagic = 0x4b4f4c4f;  // "KOLO"

struct Identity {
  uint32_t magic;
  int32_t rank;
  char nonce[32];
};

// This process's sockets (and epoll descriptors, Gloo's loop has one) now.
std::set<int> sockets() {
  std::set<int> fds;
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return fds;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_name[0] == '.') continue;
    const int fd = std::atoi(e->d_name);
    char target[64] = {0};
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    if (::readlink(link.c_str(), target, sizeof target - 1) > 0 &&
        (std::strncmp(target, "socket:", 7) == 0 || std::strncmp(target, "anon_inode:", 11) == 0)) {
      fds.insert(fd);
    }
  }
  ::closedir(dir);
  return fds;
}

void close_on_exec(const std::set<int>& before) {
  for (int fd : sockets()) {
    if (before.count(fd)) continue;
    const int flags = ::fcntl(fd, F_GETFD);
    if (flags >= 0) ::fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
  }
}

void ignore_sigpipe() {
  struct sigaction current {};
  if (::sigaction(SIGPIPE, nullptr, &current) == 0 && current.sa_handler == SIG_DFL) ::signal(SIGPIPE, SIG_IGN);
}

}  // namespace

Status GlooMesh::connect(const Rendezvous& rendezvous, const std::string& iface, double timeout_seconds,
                         std::shared_ptr<GlooMesh>* out, std::function<Status()> peers_there) {
  std::shared_ptr<GlooMesh> mesh(new GlooMesh());
  mesh->rank_ = rendezvous.rank;
  mesh->size_ = rendezvous.size;
  mesh->hosts_ = rendezvous.hosts;
  if (rendezvous.size == 1) {  // nothing to connect
    *out = std::move(mesh);
    return Status::OK();
  }
  const std::string where = "init() on rank " + std::to_string(rendezvous.rank) + ": Gloo's connections";
  gloo::transport::tcp::attr attr;
  if (!iface.empty()) {
    attr.iface = iface;
  } else {
    attr.hostname = source_address_towards(rendezvous.store_host);
    if (attr.hostname.empty()) {
      return Status::Internal(where + ": no address of this host reaches the store's host " + rendezvous.store_host +
                              " (set KOLO_GLOO_IFACE)");
    }
  }
  ignore_sigpipe();
  const std::set<int> before = sockets();
  try {
    mesh->device_ = gloo::transport::tcp::CreateDevice(attr);
    mesh->context_ = std::make_shared<gloo::rendezvous::Context>(rendezvous.rank, rendezvous.size);
    mesh->context_->setTimeout(std::chrono::milliseconds(static_cast<int64_t>(timeout_seconds * 1000)));
    const auto deadline = KeyValueStore::Clock::now() + std::chrono::duration_cast<KeyValueStore::Clock::duration>(
                                                            std::chrono::duration<double>(timeout_seconds));
    GlooStore store(*rendezvous.store, rendezvous.prefix + "mesh/", deadline, std::move(peers_there));
    mesh->context_->connectFullMesh(store, mesh->device_);
  } catch (const std::exception& e) {
    return Status::Internal(where + " (" + (iface.empty() ? attr.hostname : "interface " + iface) +
                            ") did not form: " + e.what());
  }
  close_on_exec(before);
  Status s = mesh->check_identities(rendezvous.nonce);
  if (!s.ok()) return Status(s.code(), where + ": " + s.message());
  mesh->interrupter_ = add_give_up_interrupter([m = mesh.get()](const std::string& why) {
    m->break_with(Status::Aborted("a wait of kolo's Gloo world given up: " + why));
  });
  *out = std::move(mesh);
  return Status::OK();
}

GlooMesh::~GlooMesh() {
  if (interrupter_ != 0) remove_give_up_interrupter(interrupter_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    report_ = nullptr;  // a mesh let go of (after a recovery) is no failure
  }
  break_with(Status::Aborted("kolo's Gloo connections were closed"));
  // Buried buffers after the connections: nothing reaches them any more.
  context_.reset();
  buried_.clear();
}

std::string GlooMesh::who(int rank) const {
  const std::string host = rank >= 0 && static_cast<size_t>(rank) < hosts_.size() ? hosts_[static_cast<size_t>(rank)] : "?";
  return "rank " + std::to_string(rank) + " (host " + host + ")";
}

Status GlooMesh::post(bool send, int peer, uint64_t slot, char* data, size_t bytes, const char* what,
                      std::unique_ptr<gloo::transport::UnboundBuffer>* out) {
  Status s = broken();
  if (!s.ok()) return Status(s.code(), std::string(what) + ": " + s.message());
  try {
    auto buffer = context_->createUnboundBuffer(data, bytes);
    if (send) {
      buffer->send(peer, slot, 0, bytes);
    } else {
      buffer->recv(peer, slot, 0, bytes);
    }
    *out = std::move(buffer);
    return Status::OK();
  } catch (const std::exception& e) {
    const Status failed = Status::Internal(std::string(what) + (send ? " to " : " from ") + who(peer) + ": " + e.what());
    break_with(failed);
    return failed;
  }
}

Status GlooMesh::wait(gloo::transport::UnboundBuffer& buffer, bool send, int peer, const char* what) {
  const auto key = std::make_pair(&buffer, send);
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!broken_.ok()) return Status(broken_.code(), std::string(what) + ": " + broken_.message());
    waiting_.insert(key);
  }
  Status result;
  try {
    const bool done = send ? buffer.waitSend(nullptr, kForever) : buffer.waitRecv(nullptr, kForever);
    if (!done) result = broken();  // aborted: the mesh broke
    if (!done && result.ok()) result = Status::Aborted("kolo's Gloo connections were closed");
  } catch (const std::exception& e) {
    result = Status::Internal(std::string(what) + (send ? " to " : " from ") + who(peer) + " failed: " + e.what());
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    waiting_.erase(key);
  }
  if (!result.ok()) {
    break_with(result);
    const Status why = broken();
    return Status(why.code(), std::string(what) + ": " + why.message());
  }
  return Status::OK();
}

void GlooMesh::bury(std::unique_ptr<gloo::transport::UnboundBuffer> buffer, const char* why) {
  break_with(Status::Aborted(std::string("a transfer was given up (") + why + ")"));
  std::lock_guard<std::mutex> lock(mu_);
  buried_.push_back(std::move(buffer));
}

void GlooMesh::report_failures_to(std::function<void(const std::string& what)> report) {
  std::lock_guard<std::mutex> lock(mu_);
  report_ = std::move(report);
}

void GlooMesh::break_with(const Status& why, bool report) {
  std::function<void(const std::string&)> reporter;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (broken_.ok()) {
      broken_ = why.ok() ? Status::Aborted("kolo's Gloo connections were closed") : why;
      if (report_ && broken_.code() != StatusCode::kPeersFailed) {
        broken_ = Status::PeersFailed(broken_.message() + " (" + kPeersFailedWords + ")");
      }
      if (report) reporter = report_;
    }
    close_locked();
  }
  // Outside the lock: the report revokes, which breaks this mesh again (a no-op by then).
  if (reporter) reporter(why.message());
}

void GlooMesh::close_locked() {
  for (const auto& [buffer, send] : waiting_) {
    if (send) {
      buffer->abortWaitSend();
    } else {
      buffer->abortWaitRecv();
    }
  }
  if (!closed_ && context_) {
    closed_ = true;
    try {
      context_->closeConnections();
    } catch (const std::exception&) {
      // Already closed by a failure: nothing more arrives either way.
    }
  }
}

Status GlooMesh::broken() const {
  std::lock_guard<std::mutex> lock(mu_);
  return broken_;
}

Status GlooMesh::check_identities(const std::string& nonce) {
  Identity mine{kIdentityMagic, rank_, {}};
  std::memcpy(mine.nonce, nonce.data(), std::min(nonce.size(), sizeof mine.nonce));
  std::vector<Identity> theirs(static_cast<size_t>(size_));
  std::vector<std::unique_ptr<gloo::transport::UnboundBuffer>> receives(static_cast<size_t>(size_)),
      sends(static_cast<size_t>(size_));
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    Status s = post(false, p, kIdentitySlot, reinterpret_cast<char*>(&theirs[static_cast<size_t>(p)]), sizeof(Identity),
                    "the identity check", &receives[static_cast<size_t>(p)]);
    if (!s.ok()) return s;
  }
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    Status s = post(true, p, kIdentitySlot, reinterpret_cast<char*>(&mine), sizeof mine, "the identity check",
                    &sends[static_cast<size_t>(p)]);
    if (!s.ok()) return s;
  }
  for (int p = 0; p < size_; ++p) {
    if (p == rank_) continue;
    Status s = wait(*receives[static_cast<size_t>(p)], false, p, "the identity check");
    if (s.ok()) s = wait(*sends[static_cast<size_t>(p)], true, p, "the identity check");
    if (!s.ok()) return s;
    const Identity& got = theirs[static_cast<size_t>(p)];
    if (got.magic != kIdentityMagic || got.rank != p || std::memcmp(got.nonce, mine.nonce, sizeof mine.nonce) != 0) {
      const Status wrong = Status::Internal("the connection to " + who(p) + " is not that rank of this job (another "
                                            "job's process, or a stranger, on the port Gloo listened on)");
      break_with(wrong);
      return wrong;
    }
  }
  return Status::OK();
}

}  // namespace kolo
