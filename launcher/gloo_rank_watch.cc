#include "gloo_rank_watch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>

#include "launcher_messages.h"
#include "stop_signals.h"
#include "store/tcp_store_client.h"

namespace kolo {
namespace launcher {
namespace {

// How long ranks get to end after SIGTERM before SIGKILL.
constexpr double kStopGraceSeconds = 5.0;

volatile sig_atomic_t g_hosts_changed = 0;

void on_hosts_changed(int) { g_hosts_changed = 1; }

std::string exit_text(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    return "exited on signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
  }
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

int exit_code(int status) { return WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status); }

// A word to every rank through the job's store (their peer watch reads it: a rank on another host, which a
// signal to ssh here does not reach, hears it too).
void tell_ranks(const TcpStoreServer& server, const GlooStoreAddress& store, const std::string& key,
                const std::string* value) {
  std::unique_ptr<TcpStoreClient> client;
  const auto deadline = KeyValueStore::Clock::now() + std::chrono::seconds(2);
  if (!TcpStoreClient::connect("127.0.0.1", server.port(), store.token, deadline, &client).ok()) return;
  int64_t n = 0;
  if (value != nullptr) {
    client->set(key, *value);
  } else {
    client->add(key, 1, &n);
  }
}

std::string who(const Running& p) {
  return (p.rank >= 0 ? "rank " + std::to_string(p.rank) : std::string("srun")) + " (pid " + std::to_string(p.pid) +
         " on " + p.host + ")";
}

}  // namespace

std::string ended_key(const GlooStoreAddress& store) { return "kolo/" + store.job_id + "/ended"; }
std::string hosts_changed_key(const GlooStoreAddress& store) { return "kolo/" + store.job_id + "/hosts_changed"; }

int watch_ranks(const std::vector<Running>& running, const TcpStoreServer& server, const GlooStoreAddress& store,
                bool in_place) {
  struct sigaction sa {};
  sa.sa_handler = on_hosts_changed;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR1, &sa, nullptr);
  std::map<pid_t, const Running*> alive;
  for (const Running& p : running) alive[p.pid] = &p;
  int result = 0;
  double stopping_since = -1;
  auto stop = [&](const std::string& why) {
    stopping_since = now();
    tell_ranks(server, store, ended_key(store), &why);
    for (const auto& kv : alive) kill(-kv.first, SIGTERM);
  };
  while (!alive.empty()) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid > 0 && alive.count(pid)) {
      const Running* p = alive[pid];
      alive.erase(pid);
      const bool failed = !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
      if (in_place) {
        // The last to end decides: the survivors end after the ranks they outlived.
        result = exit_code(status);
        if (failed && stopping_since < 0 && !alive.empty()) {
          say() << who(*p) << " " << exit_text(status) << ": the others go on in place\n";
        }
      } else if (failed && stopping_since < 0) {
        say() << who(*p) << " " << exit_text(status) << ": ending the job\n";
        result = exit_code(status);
        stop("rank " + std::to_string(p->rank) + " " + exit_text(status));
      }
      continue;
    }
    if (g_hosts_changed) {
      g_hosts_changed = 0;
      tell_ranks(server, store, hosts_changed_key(store), nullptr);
    }
    if (stop_signal() != 0 && stopping_since < 0) {
      result = 128 + stop_signal();
      stop(std::string("kolorun was stopped (") + strsignal(stop_signal()) + ")");
    }
    if (stopping_since >= 0 && now() - stopping_since > kStopGraceSeconds) {
      for (const auto& kv : alive) kill(-kv.first, SIGKILL);
    }
    usleep(20000);
  }
  return result;
}

}  // namespace launcher
}  // namespace kolo
