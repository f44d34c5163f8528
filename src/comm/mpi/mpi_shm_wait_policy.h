// How the host's shared-memory waits (comm/shm/shm_group.h) end when an MPI job loses a peer: the peer
// watch's give-up (comm/give_up.h), a failure reported in place (comm/peer_failure.h: the op fails with
// kPeersFailed, as MPI's calls on the revoked communicators do; ULFM's detector declares a frozen peer
// to MPI's calls alone, so the waits probe for it), and a host peer seen ending (reported like a failure
// MPI saw). While waiting they keep the crossing between hosts moving (its messages move only as their
// thread calls into MPI).
#pragma once

#include <mpi.h>

#include <chrono>
#include <string>
#include <vector>

#include "comm/shm/shm_group.h"

namespace kolo {

class MpiShmWaitPolicy : public ShmWaitPolicy {
 public:
  // names[i]: how local rank i is named in messages ("rank 3"). `local`: the host's communicator.
  // `crossing`: the communicator between hosts whose messages the waits keep moving (MPI_COMM_NULL on one
  // host).
  MpiShmWaitPolicy(std::vector<std::string> names, MPI_Comm local, MPI_Comm crossing)
      : names_(std::move(names)), local_(local), crossing_(crossing) {}
  Status interrupted() override;
  Status peer_ended(int peer, pid_t pid) override;
  void progress() override;

 private:
  // In place: every 2 ms of waiting, whether MPI has declared a peer failed.
  Status probe_for_failures();
  // A receive from any source on the host's communicator: it fails (named `what`) once ULFM has declared
  // a peer failed.
  Status failure_mpi_declared(const std::string& what);

  std::vector<std::string> names_;
  MPI_Comm local_;
  MPI_Comm crossing_;
  std::chrono::steady_clock::time_point next_probe_{};
};

}  // namespace kolo
