#include "elastic_launch.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <map>
#include <random>
#include <set>
#include <thread>

#include "attempt_start.h"
#include "failure_blame.h"
#include "host_discovery.h"
#include "in_place_reports.h"

namespace kolo {
namespace launcher {
namespace {

// How long mpirun may outlive a peer watch's report of a lost rank before kolorun ends it.
constexpr double kLostPeerGraceSeconds = 10;
// How long mpirun may outlive the last survivor's exit, in place, before kolorun ends it (it is
// waiting for a lost process that will not end: frozen, or on a host cut off).
constexpr double kSurvivorsGoneGraceSeconds = 3;

// SIGINT and SIGTERM go on to mpirun, which stops every rank; nothing restarts after one.
volatile sig_atomic_t g_stop_signal = 0;
volatile sig_atomic_t g_mpirun_pid = 0;

void pass_on_stop(int sig) {
  g_stop_signal = sig;
  if (g_mpirun_pid > 0) kill(g_mpirun_pid, sig);
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = pass_on_stop;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
}

double now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Sleeps, waking early for a stop signal; false if one came.
bool pause_for(double seconds) {
  const double until = now() + seconds;
  while (!g_stop_signal && now() < until) {
    std::this_thread::sleep_for(std::chrono::duration<double>(std::min(0.05, until - now())));
  }
  return !g_stop_signal;
}

std::string random_job_id() {
  std::random_device random;
  char text[17];
  std::snprintf(text, sizeof text, "%08x%08x", random(), random());
  return text;
}

// As a shell reports it: the exit code, or 128 + the signal.
int exit_status(int wait_status) {
  return WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : 128 + WTERMSIG(wait_status);
}

std::string describe(int wait_status) {
  return WIFEXITED(wait_status) ? "status " + std::to_string(WEXITSTATUS(wait_status))
                                : "signal " + std::to_string(WTERMSIG(wait_status));
}

std::ostream& say() { return std::cerr << "kolorun: "; }

std::string hosts_text(const std::vector<Host>& hosts) { return hosts.empty() ? "none" : host_list_text(hosts); }

// The hosts to run on: the given ones, or the discovery script's last good answer, less those left out.
struct HostState {
  std::vector<Host> hosts;
  std::string warned;  // the script's problem, printed once until it works again
  std::map<std::string, int> failures;  // attempts that failed blaming each host
  std::set<std::string> left_out;       // blamed --blacklist-after times: not used again
};

void drop_left_out(HostState* s) {
  std::vector<Host> kept;
  for (const Host& h : s->hosts) {
    if (!s->left_out.count(h.name)) kept.push_back(h);
  }
  s->hosts = kept;
}

// A failed attempt blamed these hosts (Open MPI's or kolo's own words); one that reaches
// --blacklist-after failures is left out from now on.
void count_failures(const LaunchOptions& o, const std::set<std::string>& blamed, HostState* s) {
  for (const std::string& host : blamed) {
    const int n = ++s->failures[host];
    if (o.blacklist_after > 0 && n >= o.blacklist_after && s->left_out.insert(host).second) {
      say() << "host " << host << " failed " << n << " times (--blacklist-after " << o.blacklist_after
            << "); leaving it out of the job\n";
    }
  }
  drop_left_out(s);
}

// mpirun's standard error, passed on as it comes, read line by line for the host a failure blames.
struct ErrorWatch {
  int fd = -1;
  std::string line;
  std::set<std::string> blamed;
  double peer_lost_at = 0;  // when a rank's peer watch first reported a lost peer
  SurvivorExits survivors;  // in place: the survivors of a lost peer that said they exit
  int in_place_size = 0;    // in place: the job's size after its last recovery (0: none yet)
  double recovery_given_up_at = 0;  // in place: when a rank first said it gave up a recovery
  bool started = false;     // rank 0 said every rank of the attempt has started

  // Reads what is there without blocking; false once mpirun's side is closed.
  bool pump() {
    char buffer[4096];
    for (;;) {
      const ssize_t n = read(fd, buffer, sizeof buffer);
      if (n > 0) {
        if (write(STDERR_FILENO, buffer, static_cast<size_t>(n)) < 0) {
          // kolorun's own stderr is gone: keep reading, so that mpirun never blocks on a full pipe
        }
        for (ssize_t i = 0; i < n; ++i) {
          if (buffer[i] != '\n') {
            line += buffer[i];
            continue;
          }
          std::string host;
          const Blame blame = blamed_host(line, &host);
          if (blame != Blame::kNone) blamed.insert(host);
          if (blame == Blame::kLostPeer && peer_lost_at == 0) peer_lost_at = now();
          survivors.read(line);
          if (const int n = in_place_job_size(line)) in_place_size = n;
          if (recovery_given_up_at == 0 && recovery_given_up(line)) recovery_given_up_at = now();
          if (started_ranks(line) > 0) started = true;
          line.clear();
        }
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
    }
  }
};

void rediscover(const LaunchOptions& o, HostState* s) {
  if (o.discovery_script.empty()) return;
  std::string error;
  if (discover_hosts(o.discovery_script, &s->hosts, &error)) {
    s->warned.clear();
    drop_left_out(s);
  } else if (error != s->warned) {
    say() << "warning: " << error << "; keeping the last hosts (" << hosts_text(s->hosts) << ")\n";
    s->warned = error;
  }
}

// Until the hosts have `min_np` slots, runs the script again each interval. False when
// --elastic-timeout passes first (saying so) or a stop signal comes.
bool wait_for_slots(const LaunchOptions& o, int min_np, HostState* s) {
  const double since = now();
  while (total_slots(s->hosts) < min_np) {
    const double left = o.elastic_timeout_seconds - (now() - since);
    if (left <= 0) {
      say() << "fewer than --min-np " << min_np << " slots (have " << total_slots(s->hosts) << ": "
            << hosts_text(s->hosts) << ") for " << o.elastic_timeout_seconds << " s; ending the job\n";
      return false;
    }
    if (!pause_for(std::min(left, o.discovery_interval_seconds))) return false;
    rediscover(o, s);
  }
  return true;
}

// Waits for mpirun to end. Meanwhile runs the script each interval and, the first time it finds
// room for more ranks than this attempt has, sends mpirun SIGUSR1, which Open MPI passes on to
// every rank: they commit and exit 75.
int watch(pid_t pid, const LaunchOptions& o, HostState* s, int num_proc, int attempt, ErrorWatch* errors) {
  const std::vector<Host> started_on = s->hosts;
  bool asked = false;
  bool open = true;
  double ending_since = 0;  // when kolorun began ending an attempt that outlived a lost peer
  double survivors_gone_at = 0;  // in place: when the last survivor said it exits
  bool ending_for_survivors = false;
  bool ending_for_recovery = false;
  const double started_at = now();
  double next = now() + o.discovery_interval_seconds;
  int status = 0;
  for (;;) {
    if (open) open = errors->pump();
    const pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      if (open) errors->pump();  // what mpirun wrote last
      // Ended by kolorun after the survivors: theirs is the job's status, not mpirun's.
      if (ending_for_survivors) return W_EXITCODE(errors->survivors.status(), 0);
      // A recovery given up is a failed attempt, whatever mpirun made of SIGTERM.
      return ending_for_recovery && status == 0 ? W_EXITCODE(1, 0) : status;
    }
    if (r < 0 && errno != EINTR) return W_EXITCODE(1, 0);  // not ours to wait for: cannot happen
    // Two reasons to end mpirun, SIGTERM then SIGKILL. Without --in-place the survivors of a lost peer
    // end at once, but mpirun may still wait for its daemon on a host that cannot be reached (a cut
    // link), forever. In place, once every survivor has exited, what mpirun still waits for is a lost
    // process that will not end (frozen, or on a host cut off): the job is over, with their status.
    const bool outlived_peer =
        !o.in_place && errors->peer_lost_at > 0 && now() - errors->peer_lost_at > kLostPeerGraceSeconds;
    if (o.in_place && survivors_gone_at == 0 && errors->survivors.all_exited()) survivors_gone_at = now();
    const bool survivors_gone = survivors_gone_at > 0 && now() - survivors_gone_at > kSurvivorsGoneGraceSeconds;
    // A rank frozen (or its host cut off) in MPI's start-up holds every rank there, out of reach of
    // kolo's peer watch and of ULFM's detector: the attempt ends and the next starts from the last commit.
    const bool not_started = !errors->started && now() - started_at > o.ranks_start_timeout_seconds;
    // In place, a rank gave up a recovery that could not finish (a lost peer MPI never declared failed); the
    // others give up within moments: the attempt is over, and the next starts from the last commit.
    const bool recovery_stuck = o.in_place && errors->recovery_given_up_at > 0 &&
                                now() - errors->recovery_given_up_at > kLostPeerGraceSeconds;
    if (outlived_peer || survivors_gone || not_started || recovery_stuck) {
      if (ending_since == 0) {
        if (recovery_stuck && !survivors_gone) {
          say() << "a rank gave up its recovery in place (a lost peer that MPI never declared failed) "
                << kLostPeerGraceSeconds << " s ago: ending mpirun\n";
          ending_for_recovery = true;
        } else if (not_started && !survivors_gone && !outlived_peer) {
          say() << "the ranks of attempt " << attempt << " have not all started within --start-timeout "
                << o.ranks_start_timeout_seconds << " s (one frozen, or its host unreachable, in MPI's start-up?): "
                << "ending mpirun\n";
        } else if (survivors_gone) {
          say() << "every rank left in place has exited (status " << errors->survivors.status()
                << "); mpirun still waits for a lost one (frozen, or its host cut off): ending mpirun\n";
        } else {
          say() << "the job has not ended " << kLostPeerGraceSeconds
                << " s after a peer was lost (a host cut off?); ending mpirun\n";
        }
        ending_for_survivors = survivors_gone;
        kill(pid, SIGTERM);
        ending_since = now();
      } else if (now() - ending_since > 5) {
        kill(pid, SIGKILL);
      }
    }
    if (!o.discovery_script.empty() && !asked && !g_stop_signal && now() >= next) {
      rediscover(o, s);
      next = now() + o.discovery_interval_seconds;
      const int slots = total_slots(s->hosts);
      // In place, the job may run on fewer ranks than it started with (lost ones cut out): a slot
      // that comes back is room to grow into.
      const int running = errors->in_place_size > 0 ? errors->in_place_size : num_proc;
      const bool room = slots > total_slots(started_on) || running < num_proc;
      const int next_num_proc = attempt_num_proc(o, slots, attempt + 1);
      if (room && next_num_proc > running) {
        if (running < num_proc) {
          say() << "hosts " << hosts_text(s->hosts) << " have room for " << next_num_proc
                << " ranks while the job runs on " << running << " of its " << num_proc
                << " (lost ones cut out in place): asking the job to restart on them\n";
        } else {
          say() << "hosts changed (" << hosts_text(started_on) << " -> " << hosts_text(s->hosts)
                << "): asking the job to restart on them\n";
        }
        kill(pid, SIGUSR1);
        asked = true;
      }
    }
    pollfd p{errors->fd, POLLIN, 0};
    if (!open || poll(&p, 1, 20) < 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Forks and execs mpirun, its standard error into a pipe read from *err_fd (non-blocking); -1 with
// why when it did not start (not worth a restart). The child writes why into a pipe that closes
// unwritten when the exec works.
pid_t start_mpirun(const std::string& mpirun, const MpirunCommand& cmd, int* err_fd, std::string* error) {
  int fds[2], err[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *error = std::string("cannot start mpirun: ") + std::strerror(errno);
    return -1;
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    *error = std::string("cannot start mpirun: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return -1;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("cannot start mpirun: ") + std::strerror(errno);
    for (int fd : {fds[0], fds[1], err[0], err[1]}) close(fd);
    return -1;
  }
  if (pid == 0) {
    dup2(err[1], STDERR_FILENO);  // the copy is not close-on-exec
    const std::string why = exec_mpirun(mpirun, cmd);
    if (write(fds[1], why.data(), why.size()) < 0) _exit(127);
    _exit(127);
  }
  close(fds[1]);
  close(err[1]);
  fcntl(err[0], F_SETFL, fcntl(err[0], F_GETFL) | O_NONBLOCK);
  std::string why;
  char buffer[256];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) why.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (!why.empty()) {
    waitpid(pid, nullptr, 0);
    close(err[0]);
    *error = why;
    return -1;
  }
  *err_fd = err[0];
  return pid;
}

}  // namespace

int attempt_num_proc(const LaunchOptions& o, int slots, int attempt) {
  int n = slots;
  if (o.max_np > 0) n = std::min(n, o.max_np);
  if (attempt == 0 && o.num_proc > 0) n = std::min(n, o.num_proc);
  return n;
}

MpirunCommand attempt_command(const LaunchOptions& options, const Machine& machine, const std::vector<Host>& hosts,
                              int num_proc, const std::string& job_id, int attempt) {
  LaunchOptions o = options;
  o.num_proc = num_proc;
  o.hosts = hosts;
  // As settings they are set in mpirun's environment and forwarded like every KOLO_* variable.
  o.settings.emplace_back("KOLO_ELASTIC", "1");
  o.settings.emplace_back("KOLO_ELASTIC_JOB_ID", job_id);
  o.settings.emplace_back("KOLO_ELASTIC_ATTEMPT", std::to_string(attempt));
  // In place, the survivors themselves find that too few are left (kolo.elastic ends the attempt).
  if (o.in_place) o.settings.emplace_back("KOLO_ELASTIC_MIN_NP", std::to_string(std::max(1, o.min_np)));
  return build_mpirun_command(o, machine);
}

std::string exec_mpirun(const std::string& mpirun, const MpirunCommand& cmd) {
  for (const auto& kv : cmd.set_env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
  std::vector<std::string> words = cmd.argv;
  std::vector<char*> args;
  for (std::string& w : words) args.push_back(&w[0]);
  args.push_back(nullptr);
  execv(mpirun.c_str(), args.data());
  return "cannot run " + mpirun + ": " + std::strerror(errno);
}

int run_elastic(const LaunchOptions& o, const Machine& m) {
  install_stop_handlers();
  const int min_np = std::max(1, o.min_np);
  HostState s;
  if (o.discovery_script.empty()) {
    s.hosts = effective_hosts(o);
  } else {
    // No last good answer to fall back on yet: a script that fails now is a mistake to report.
    std::string error;
    if (!discover_hosts(o.discovery_script, &s.hosts, &error)) {
      say() << error << "\n";
      return 2;
    }
  }
  const std::string job_id = random_job_id();
  int resets = 0;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) rediscover(o, &s);
    if (!wait_for_slots(o, min_np, &s)) return g_stop_signal ? 128 + g_stop_signal : 1;
    const int num_proc = attempt_num_proc(o, total_slots(s.hosts), attempt);
    const MpirunCommand cmd = attempt_command(o, m, s.hosts, num_proc, job_id, attempt);
    if (o.dry_run) {
      std::cout << command_text(cmd) << "\n";
      return 0;
    }
    if (o.verbose) say() << "attempt " << attempt << ": " << command_text(cmd) << "\n";
    std::string error;
    ErrorWatch errors;
    const pid_t pid = start_mpirun(m.mpirun, cmd, &errors.fd, &error);
    if (pid < 0) {
      say() << error << "\n";
      return 2;
    }
    g_mpirun_pid = pid;
    if (g_stop_signal) kill(pid, g_stop_signal);  // came before mpirun's pid was known
    const int status = watch(pid, o, &s, num_proc, attempt, &errors);
    close(errors.fd);
    g_mpirun_pid = 0;
    if (g_stop_signal || status == 0) return exit_status(status);
    if (WIFEXITED(status) && WEXITSTATUS(status) == kPlannedRestartStatus) {
      say() << "attempt " << attempt << " ended with status " << kPlannedRestartStatus
            << " (a planned restart); restarting on the hosts there are now\n";
      continue;
    }
    ++resets;
    count_failures(o, errors.blamed, &s);
    const std::string ended = "attempt " + std::to_string(attempt) + " ended with " + describe(status);
    if (o.reset_limit >= 0 && resets > o.reset_limit) {
      say() << ended << "\n";
      say() << "--reset-limit " << o.reset_limit << " reached; ending the job\n";
      return exit_status(status);
    }
    say() << ended << "; restarting from the last commit (reset " << resets << " of "
          << (o.reset_limit < 0 ? "unlimited" : std::to_string(o.reset_limit)) << ")\n";
    if (!pause_for(0.2)) return exit_status(status);
  }
}

}  // namespace launcher
}  // namespace kolo
