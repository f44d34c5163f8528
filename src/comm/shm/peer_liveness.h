// Whether the other ranks of a host still run, from their pids: a pidfd (Linux 5.3+) turns readable
// when its process ends, so a peer killed in the middle of a shared-memory collective is seen at once,
// without waiting for MPI or the peer watch to notice. Where pidfds are not available (an old kernel,
// a peer in another pid namespace) that peer is not watched here, and the peer watch remains.
#pragma once

#include <sys/types.h>

#include <vector>

namespace kolo {

class PeerLiveness {
 public:
  // pids[i]: local rank i's process; `self` is not watched.
  PeerLiveness(const std::vector<pid_t>& pids, int self);
  ~PeerLiveness();
  PeerLiveness(const PeerLiveness&) = delete;
  PeerLiveness& operator=(const PeerLiveness&) = delete;

  // Whether local rank `peer` has ended (false where it cannot be told).
  bool ended(int peer) const;
  pid_t pid(int peer) const { return pids_[static_cast<size_t>(peer)]; }

 private:
  std::vector<pid_t> pids_;
  std::vector<int> fds_;  // -1: not watched
};

}  // namespace kolo
