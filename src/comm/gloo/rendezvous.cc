#include "comm/gloo/rendezvous.h"

#include <dirent.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "common/logging.h"
#include "common/ranks.h"
#include "store/tcp_store_client.h"

namespace kolo {
namespace {

using Clock = KeyValueStore::Clock;

std::string hostname() {
  char name[256] = {0};
  ::gethostname(name, sizeof name - 1);
  return name;
}

std::string seconds_text(double s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

// Whether this process listens on TCP port `port` (a store torch.distributed made here before kolo).
bool listening_here(int port) {
  std::set<std::string> inodes;
  for (const char* table : {"/proc/self/net/tcp", "/proc/self/net/tcp6"}) {
    std::ifstream in(table);
    std::string line;
    std::getline(in, line);
    while (std::getline(in, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
      const size_t colon = local.rfind(':');
      if (state == "0A" && colon != std::string::npos && std::stoi(local.substr(colon + 1), nullptr, 16) == port) {
        inodes.insert(inode);
      }
    }
  }
  DIR* dir = ::opendir("/proc/self/fd");
  if (dir == nullptr) return false;
  bool mine = false;
  while (dirent* e = ::readdir(dir)) {
    char target[64] = {0};
    const std::string link = std::string("/proc/self/fd/") + e->d_name;
    if (::readlink(link.c_str(), target, sizeof target - 1) <= 0) continue;
    const std::string t = target;
    if (t.rfind("socket:[", 0) == 0 && inodes.count(t.substr(8, t.size() - 9))) mine = true;
  }
  ::closedir(dir);
  return mine;
}

// Rank 0 of a bare launch serves the store on MASTER_PORT. Bound to MASTER_ADDR's address where that is
// this host's, else to every interface (a Kubernetes service name resolves to an address no pod holds).
// A port this process holds already (the script's torch.distributed made its store first) is left to that
// store; one another process holds is another job's: joining its store would mix two jobs.
Status serve(const LauncherEnv& env, Rendezvous* out) {
  Status s = TcpStoreServer::start(env.store_host, env.store_port, env.token, &out->server);
  if (!s.ok() && s.message().find(std::strerror(EADDRINUSE)) == std::string::npos) {
    s = TcpStoreServer::start("0.0.0.0", env.store_port, env.token, &out->server);
  }
  if (!s.ok() && s.message().find(std::strerror(EADDRINUSE)) != std::string::npos) {
    out->server.reset();
    if (listening_here(env.store_port)) {
      KOLO_LOG(kInfo, "the store's port " << env.store_port << " is this process's (torch.distributed's store): "
                                          "rank 0 uses that store");
      out->store_in_process = true;
      return Status::OK();
    }
    return Status::InvalidArgument("MASTER_PORT " + std::to_string(env.store_port) + " is taken by another process "
                                   "(another job on the same port? give each job its own MASTER_PORT)");
  }
  out->store_in_process = s.ok();
  return s;
}

std::string list_text(const std::vector<int>& ranks) { return ranks_phrase(ranks); }

}  // namespace

Status random_hex(std::string* out) {
  unsigned char bytes[16];
  size_t got = 0;
  while (got < sizeof bytes) {
    const ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::Internal(std::string("getrandom: ") + std::strerror(errno));
    got += static_cast<size_t>(n);
  }
  constexpr char digits[] = "0123456789abcdef";
  out->clear();
  for (unsigned char b : bytes) {
    out->push_back(digits[b >> 4]);
    out->push_back(digits[b & 15]);
  }
  return Status::OK();
}

Status rendezvous(const LauncherEnv& env, double timeout_seconds, Rendezvous* out) {
  *out = Rendezvous();
  out->rank = std::max(0, env.rank);
  out->size = std::max(1, env.size);
  out->hosts = {hostname()};
  if (out->size == 1) return Status::OK();
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(timeout_seconds));
  const std::string by = "started by " + env.name;
  out->store_host = env.store_host;
  out->store_port = env.store_port;
  out->token = env.token;
  if (env.serves_store) {
    Status s = serve(env, out);
    if (!s.ok()) return Status(s.code(), "init() on rank 0: " + s.message() + " (" + by + ")");
  }
  std::unique_ptr<TcpStoreClient> client;
  Status s = TcpStoreClient::connect(env.store_host, env.store_port, env.token, deadline, &client);
  if (!s.ok()) {
    return Status(s.code(), "init() on rank " + std::to_string(out->rank) + ": the job's store cannot be reached: " +
                                s.message() + " (" + by + "; KOLO_GLOO_TIMEOUT_SECONDS=" +
                                seconds_text(timeout_seconds) + ")");
  }
  KeyValueStore& store = *client;
  out->store = std::move(client);
  const std::string job = "kolo/" + (env.job_id.empty() ? std::string("job") : env.job_id) + "/";
  int64_t start = 0;
  s = store.add(job + "starts/" + std::to_string(out->rank), 1, &start);
  if (!s.ok()) return s;
  out->job_prefix = job;
  out->prefix = job + std::to_string(start) + "/";
  const std::string where = " (" + by + ", store " + store.where() + ")";

  // The claim: a second process claiming this rank (two jobs on one store, or a RANK given twice) is told so.
  std::string mine, current;
  s = random_hex(&mine);
  if (s.ok()) s = store.compare_set(out->prefix + "claim/" + std::to_string(out->rank), "", mine, &current);
  if (!s.ok()) return s;
  if (current != mine) {
    return Status::InvalidArgument("init() on rank " + std::to_string(out->rank) + ": another process already came as rank " +
                                   std::to_string(out->rank) + " of this job (two jobs on one store? give each its own "
                                   "MASTER_PORT; or RANK given twice)" + where);
  }
  std::ostringstream info;
  info << out->hosts[0] << "\n" << ::getpid() << "\n" << out->size;
  s = store.set(out->prefix + "info/" + std::to_string(out->rank), info.str());
  if (!s.ok()) return s;

  // Every rank's place, waited for in slices so that a slow start is named while it lasts, and named still
  // when rank 0, serving the store, gives up first and takes the store with it.
  std::vector<std::string> keys;
  for (int r = 0; r < out->size; ++r) keys.push_back(out->prefix + "info/" + std::to_string(r));
  std::vector<std::string> infos;
  std::string missing_text;
  bool said = false;
  const auto started_waiting = Clock::now();
  while (true) {
    const auto slice = std::min(deadline, Clock::now() + std::chrono::seconds(1));
    s = store.multi_get(keys, slice, &infos);
    if (s.ok()) break;
    const std::string rank_text = "init() on rank " + std::to_string(out->rank) + ": ";
    const std::string hint = " (KOLO_GLOO_TIMEOUT_SECONDS; a WORLD_SIZE larger than the ranks started?)" + where;
    if (s.code() != StatusCode::kTimeout) {
      if (missing_text.empty()) return s;
      return Status::Timeout(rank_text + missing_text + " did not come before the store closed (" + s.message() +
                             ")" + hint);
    }
    std::vector<int> missing;
    for (int r = 0; r < out->size; ++r) {
      bool here = false;
      if (store.check({keys[static_cast<size_t>(r)]}, &here).ok() && !here) missing.push_back(r);
    }
    missing_text = list_text(missing) + " of " + std::to_string(out->size);
    if (Clock::now() >= deadline) {
      return Status::Timeout(rank_text + missing_text + " did not come within " + seconds_text(timeout_seconds) +
                             " s" + hint);
    }
    if (!said && out->rank == 0 && Clock::now() - started_waiting >= std::chrono::seconds(10)) {
      KOLO_LOG(kWarning, "init(): waiting for " << missing_text << " to start" << where);
      said = true;
    }
  }
  out->hosts.assign(static_cast<size_t>(out->size), "");
  for (int r = 0; r < out->size; ++r) {
    std::istringstream in(infos[static_cast<size_t>(r)]);
    std::string host, pid, size;
    std::getline(in, host);
    std::getline(in, pid);
    std::getline(in, size);
    out->hosts[static_cast<size_t>(r)] = host;
    if (size != std::to_string(out->size)) {
      return Status::InvalidArgument("init() on rank " + std::to_string(out->rank) + ": rank " + std::to_string(r) +
                                     " (host " + host + ") was started with WORLD_SIZE=" + size + ", this one with " +
                                     std::to_string(out->size) + where);
    }
  }
  return store.get(out->prefix + "claim/0", deadline, &out->nonce);
}

}  // namespace kolo
