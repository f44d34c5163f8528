#include "launch_checks.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <thread>

#include "mpirun_command.h"

namespace kolo {
namespace launcher {
namespace {

bool executable(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && access(path.c_str(), X_OK) == 0;
}

struct Check {
  std::string host;
  std::vector<std::string> argv;
  pid_t pid = -1;
  int status = 0;
  bool done = false;
};

}  // namespace

std::string find_mpirun() {
  if (const char* forced = std::getenv("KOLO_MPIRUN")) return executable(forced) ? forced : "";
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const std::string candidate = (dir.empty() ? "." : dir) + "/mpirun";
    if (executable(candidate)) return candidate;
  }
  return "";
}

std::string mpirun_version(const std::string& mpirun) {
  const std::string command = shell_join({mpirun, "--version"}) + " 2>/dev/null";
  FILE* out = popen(command.c_str(), "r");
  if (out == nullptr) return "";
  char line[256] = {0};
  const bool got = std::fgets(line, sizeof line, out) != nullptr;
  pclose(out);
  std::string text = got ? line : "";
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
  return text;
}

std::vector<std::string> unreachable_hosts(const std::vector<Host>& hosts, const std::string& hostname,
                                           const std::string& rsh_agent, const std::vector<std::string>& ssh_args,
                                           double timeout_seconds) {
  std::vector<Check> checks;
  for (const Host& h : hosts) {
    if (is_local_host(h.name, hostname)) continue;
    Check c;
    c.host = h.name;
    if (rsh_agent.empty()) {
      const int connect = std::max(1, static_cast<int>(timeout_seconds));
      c.argv = {"ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=" + std::to_string(connect)};
    } else {
      std::stringstream words(rsh_agent);
      std::string w;
      while (words >> w) c.argv.push_back(w);
    }
    // As Open MPI gives its plm_rsh_args: after the agent, before the host.
    c.argv.insert(c.argv.end(), ssh_args.begin(), ssh_args.end());
    c.argv.insert(c.argv.end(), {h.name, "true"});
    checks.push_back(c);
  }
  std::vector<std::string> failures;
  for (Check& c : checks) {
    c.pid = fork();
    if (c.pid == 0) {
      setpgid(0, 0);  // its own group, so that a timeout can end it and whatever it started
      const int devnull = open("/dev/null", O_RDWR);
      dup2(devnull, 0);
      dup2(devnull, 1);
      dup2(devnull, 2);
      std::vector<char*> argv;
      for (std::string& s : c.argv) argv.push_back(&s[0]);
      argv.push_back(nullptr);
      execvp(argv[0], argv.data());
      _exit(127);
    }
    if (c.pid < 0) {
      c.done = true;
      failures.push_back("cannot start '" + c.argv[0] + "' to reach host '" + c.host + "'");
    }
  }
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  size_t pending = 0;
  for (const Check& c : checks) pending += !c.done;
  while (pending > 0 && std::chrono::steady_clock::now() < deadline) {
    for (Check& c : checks) {
      if (c.done) continue;
      if (waitpid(c.pid, &c.status, WNOHANG) == c.pid) {
        c.done = true;
        --pending;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  for (Check& c : checks) {
    std::string command;
    for (const std::string& w : c.argv) command += (command.empty() ? "" : " ") + w;
    if (!c.done) {
      kill(-c.pid, SIGKILL);
      waitpid(c.pid, &c.status, 0);
      std::ostringstream m;
      m << "host '" << c.host << "' did not answer within " << timeout_seconds << " s (" << command
        << "); raise --start-timeout, or check the host and its network";
      failures.push_back(m.str());
    } else if (c.pid > 0 && !(WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0)) {
      const int code = WIFEXITED(c.status) ? WEXITSTATUS(c.status) : 128 + WTERMSIG(c.status);
      failures.push_back("host '" + c.host + "' cannot be reached: '" + command + "' exited with status " +
                         std::to_string(code) +
                         (c.argv[0] == "ssh" ? " (kolorun needs ssh without a password prompt to every host)" : ""));
    }
  }
  return failures;
}

}  // namespace launcher
}  // namespace kolo
