#include "comm/shm/peer_liveness.h"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace kolo {
namespace {

int open_pidfd(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  (void)pid;
  return -1;
#endif
}

}  // namespace

PeerLiveness::PeerLiveness(const std::vector<pid_t>& pids, int self) : pids_(pids), fds_(pids.size(), -1) {
  for (size_t i = 0; i < pids.size(); ++i) {
    if (static_cast<int>(i) != self && pids[i] > 0) fds_[i] = open_pidfd(pids[i]);
  }
}

PeerLiveness::~PeerLiveness() {
  for (int fd : fds_) {
    if (fd >= 0) close(fd);
  }
}

bool PeerLiveness::ended(int peer) const {
  const int fd = fds_[static_cast<size_t>(peer)];
  if (fd < 0) return false;
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

}  // namespace kolo
