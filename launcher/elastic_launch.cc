#include "elastic_launch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <random>

#include "attempt_watch.h"
#include "elastic_hosts.h"
#include "gloo_launch.h"
#include "host_discovery.h"
#include "launcher_messages.h"
#include "mpirun_process.h"
#include "stop_signals.h"

namespace kolo {
namespace launcher {
namespace {

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

}  // namespace

int attempt_num_proc(const LaunchOptions& o, int slots, int attempt) {
  int n = slots;
  if (o.max_np > 0) n = std::min(n, o.max_np);
  if (attempt == 0 && o.num_proc > 0) n = std::min(n, o.num_proc);
  return n;
}

LaunchOptions attempt_options(const LaunchOptions& options, const std::vector<Host>& hosts, int num_proc,
                              const std::string& job_id, int attempt) {
  LaunchOptions o = options;
  o.num_proc = num_proc;
  o.hosts = hosts;
  o.discovery_script.clear();
  // As settings they are set in mpirun's environment and forwarded like every KOLO_* variable.
  o.settings.emplace_back("KOLO_ELASTIC", "1");
  o.settings.emplace_back("KOLO_ELASTIC_JOB_ID", job_id);
  o.settings.emplace_back("KOLO_ELASTIC_ATTEMPT", std::to_string(attempt));
  // In place, the survivors themselves find that too few are left (kolo.elastic ends the attempt).
  if (o.in_place) o.settings.emplace_back("KOLO_ELASTIC_MIN_NP", std::to_string(std::max(1, o.min_np)));
  // The Gloo world survives in place where it is told to (MPI's, where mpirun runs with ULFM).
  if (o.in_place && o.gloo) o.settings.emplace_back("KOLO_GLOO_IN_PLACE", "1");
  return o;
}

MpirunCommand attempt_command(const LaunchOptions& options, const Machine& machine, const std::vector<Host>& hosts,
                              int num_proc, const std::string& job_id, int attempt) {
  return build_mpirun_command(attempt_options(options, hosts, num_proc, job_id, attempt), machine);
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
    if (!discover_hosts(o.discovery_script, &s.hosts, &error, o.slots_per_host)) {
      say() << error << "\n";
      return 2;
    }
  }
  const std::string job_id = random_job_id();
  int resets = 0;
  for (int attempt = 0;; ++attempt) {
    if (attempt > 0) rediscover(o, &s);
    if (!wait_for_slots(o, min_np, &s)) return stop_signal() ? 128 + stop_signal() : 1;
    const int num_proc = attempt_num_proc(o, total_slots(s.hosts), attempt);
    std::string error;
    OutputWatch output;
    pid_t pid = -1;
    if (o.gloo) {
      // The attempt is kolorun --gloo's job (launcher/gloo_launch.h) in a child process: no mpirun.
      const LaunchOptions attempt_o = attempt_options(o, s.hosts, num_proc, job_id, attempt);
      if (o.dry_run) return run_gloo(attempt_o, m, false);
      if (o.verbose) say() << "attempt " << attempt << ": kolorun --gloo, " << num_proc << " ranks on " << hosts_text(s.hosts) << "\n";
      pid = start_gloo_attempt(attempt_o, m, &output.out.from, &output.err.from, &error);
      signal(SIGPIPE, SIG_IGN);  // as for mpirun (mpirun_process.cc)
    } else {
      const MpirunCommand cmd = attempt_command(o, m, s.hosts, num_proc, job_id, attempt);
      if (o.dry_run) {
        std::cout << command_text(cmd) << "\n";
        return 0;
      }
      if (o.verbose) say() << "attempt " << attempt << ": " << command_text(cmd) << "\n";
      pid = start_mpirun(m.mpirun, cmd, &output.out.from, &output.err.from, &error);
    }
    if (pid < 0) {
      say() << error << "\n";
      return 2;
    }
    set_mpirun_pid(pid);
    if (stop_signal()) kill(pid, stop_signal());  // came before mpirun's pid was known
    const int status = watch(pid, o, &s, num_proc, attempt, &output);
    output.close_streams();
    set_mpirun_pid(0);
    if (stop_signal() || status == 0) return exit_status(status);
    if (WIFEXITED(status) && WEXITSTATUS(status) == kPlannedRestartStatus) {
      say() << "attempt " << attempt << " ended with status " << kPlannedRestartStatus
            << " (a planned restart); restarting on the hosts there are now\n";
      continue;
    }
    ++resets;
    count_failures(o, output.blamed, &s);
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
