#include "host_discovery.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <sstream>
#include <thread>

#include "option_values.h"

namespace kolo {
namespace launcher {
namespace {

// Runs the script with its stdout in `out`. False with the problem when it cannot start, fails or
// runs past the deadline.
bool run_script(const std::string& script, double timeout_seconds, std::string* out, std::string* error) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *error = std::string("cannot make a pipe: ") + std::strerror(errno);
    return false;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("cannot fork: ") + std::strerror(errno);
    close(fds[0]);
    close(fds[1]);
    return false;
  }
  if (pid == 0) {
    setpgid(0, 0);  // its own group, so that a timeout ends it and whatever it started
    const int devnull = open("/dev/null", O_RDONLY);
    dup2(devnull, 0);
    dup2(fds[1], 1);
    execl("/bin/sh", "sh", "-c", script.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  setpgid(pid, pid);  // as the child does, whichever runs first
  close(fds[1]);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_seconds);
  auto ms_left = [&] {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    return static_cast<int>(std::max<long long>(0, left.count()));
  };
  // Read to the end of its output, then wait for it to exit, both before the deadline.
  bool open_pipe = true, exited = false;
  int status = 0;
  char buffer[4096];
  while ((open_pipe || !exited) && ms_left() > 0) {
    if (open_pipe) {
      pollfd p{fds[0], POLLIN, 0};
      if (poll(&p, 1, std::min(ms_left(), 50)) > 0) {
        const ssize_t n = read(fds[0], buffer, sizeof buffer);
        if (n > 0) out->append(buffer, static_cast<size_t>(n));
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) open_pipe = false;
      }
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (!exited) exited = waitpid(pid, &status, WNOHANG) == pid;
  }
  close(fds[0]);
  if (!exited) {
    kill(-pid, SIGKILL);
    waitpid(pid, &status, 0);
    std::ostringstream m;
    m << "did not finish within " << timeout_seconds << " s";
    *error = m.str();
    return false;
  }
  if (WIFSIGNALED(status)) {
    *error = "killed by signal " + std::to_string(WTERMSIG(status));
    return false;
  }
  if (WEXITSTATUS(status) != 0) {
    *error = "exited with status " + std::to_string(WEXITSTATUS(status));
    return false;
  }
  return true;
}

}  // namespace

bool parse_discovered_hosts(const std::string& text, std::vector<Host>* hosts, std::string* error,
                            int default_slots) {
  hosts->clear();
  std::stringstream s(text);
  std::string line;
  int number = 0;
  while (std::getline(s, line)) {
    ++number;
    line = trimmed(line);
    if (line.empty()) continue;
    const std::string where = "line " + std::to_string(number) + ": ";
    if (line[0] == ':' || line.find_first_of(" \t,") != std::string::npos) {
      *error = where + "expected 'host:slots' or 'host', got '" + line + "'";
      return false;
    }
    // One "host[:slots]" item, as -H takes it; the only thing that can be wrong now is the count.
    if (!parse_host_list(line, hosts, error)) {
      *error = where + *error;
      return false;
    }
    if (line.find(':') == std::string::npos) hosts->back().slots = default_slots;
  }
  if (hosts->empty()) {
    *error = "printed no hosts";
    return false;
  }
  return true;
}

bool discover_hosts(const std::string& script, std::vector<Host>* hosts, std::string* error, int default_slots,
                    double timeout_seconds) {
  std::string output;
  std::vector<Host> found;
  if (!run_script(script, timeout_seconds, &output, error) ||
      !parse_discovered_hosts(output, &found, error, default_slots)) {
    *error = "host discovery script " + script + ": " + *error;
    return false;
  }
  *hosts = found;
  return true;
}

}  // namespace launcher
}  // namespace kolo
