#include "mpirun_process.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace kolo {
namespace launcher {

std::string exec_mpirun(const std::string& mpirun, const MpirunCommand& cmd) {
  for (const auto& kv : cmd.set_env) setenv(kv.first.c_str(), kv.second.c_str(), 1);
  std::vector<std::string> words = cmd.argv;
  std::vector<char*> args;
  for (std::string& w : words) args.push_back(&w[0]);
  args.push_back(nullptr);
  execv(mpirun.c_str(), args.data());
  return "cannot run " + mpirun + ": " + std::strerror(errno);
}

// The child writes why it failed into a pipe that closes unwritten when the exec works.
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

}  // namespace launcher
}  // namespace kolo
