#include "mpirun_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <vector>

#include "stale_session_dir.h"

namespace kolo {
namespace launcher {

std::string exec_mpirun(const std::string& mpirun, const MpirunCommand& cmd) {
  for (const auto& kv : cmd.set_env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
  // mpirun keeps this pid: a session directory named for it was left by a killed mpirun before.
  remove_session_dir(getpid());
  std::vector<std::string> words = cmd.argv;
  std::vector<char*> args;
  for (std::string& w : words) args.push_back(&w[0]);
  args.push_back(nullptr);
  execv(mpirun.c_str(), args.data());
  return "cannot run " + mpirun + ": " + std::strerror(errno);
}

namespace {

void close_all(std::initializer_list<int> fds) {
  for (int fd : fds) close(fd);
}

}  // namespace

// The child writes why it failed into a pipe that closes unwritten when the exec works.
pid_t start_mpirun(const std::string& mpirun, const MpirunCommand& cmd, int* out_fd, int* err_fd, std::string* error) {
  int fds[2], out[2], err[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    *error = std::string("cannot start mpirun: ") + std::strerror(errno);
    return -1;
  }
  if (pipe2(out, O_CLOEXEC) != 0) {
    *error = std::string("cannot start mpirun: ") + std::strerror(errno);
    close_all({fds[0], fds[1]});
    return -1;
  }
  if (pipe2(err, O_CLOEXEC) != 0) {
    *error = std::string("cannot start mpirun: ") + std::strerror(errno);
    close_all({fds[0], fds[1], out[0], out[1]});
    return -1;
  }
  const pid_t pid = fork();
  if (pid < 0) {
    *error = std::string("cannot start mpirun: ") + std::strerror(errno);
    close_all({fds[0], fds[1], out[0], out[1], err[0], err[1]});
    return -1;
  }
  if (pid == 0) {
    signal(SIGPIPE, SIG_DFL);  // kolorun ignores it (see below); mpirun and the ranks keep the default
    dup2(out[1], STDOUT_FILENO);  // the copies are not close-on-exec
    dup2(err[1], STDERR_FILENO);
    const std::string why = exec_mpirun(mpirun, cmd);
    if (write(fds[1], why.data(), why.size()) < 0) _exit(127);
    _exit(127);
  }
  // kolorun passes on what mpirun writes: when its own output is a closed pipe (`kolorun ... | head`),
  // it must go on reading and watching, not die of SIGPIPE and leave mpirun behind.
  signal(SIGPIPE, SIG_IGN);
  close_all({fds[1], out[1], err[1]});
  for (int fd : {out[0], err[0]}) fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  std::string why;
  char buffer[256];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) why.append(buffer, static_cast<size_t>(n));
  }
  close(fds[0]);
  if (!why.empty()) {
    waitpid(pid, nullptr, 0);
    close_all({out[0], err[0]});
    *error = why;
    return -1;
  }
  *out_fd = out[0];
  *err_fd = err[0];
  return pid;
}

}  // namespace launcher
}  // namespace kolo
