// A communicator's ranks on one host, opened as a shared-memory group (comm/shm/shm_group.h) over MPI:
// the agreement that every rank of the host mapped the segment, and what its waits do when the job
// loses a peer. MpiContext opens one over its host communicator, so membership follows the
// communicator (a process set's has its own).
#pragma once

#include <mpi.h>

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "comm/shm/shm_group.h"

namespace kolo {

struct HostShmOptions {
  bool enabled = true;
  std::string dir = "/dev/shm";
  size_t slot_bytes = 0;  // 0: slot_bytes_for(the host's ranks)
};

// Each rank's slot where not given: 1 MiB, which measured faster than 256 KiB on the ResNet-50 set at 2
// ranks (benchmarks/README.md), while the segment stays within 16 MiB (slots of 64 KiB at the least), so
// that a container's 64 MB /dev/shm holds it beside others.
size_t slot_bytes_for(int ranks);

// How the group's waits end when the job loses a peer, in MPI's terms: the peer watch's give-up
// (mpi_status.h), a failure reported in place (mpi_fault.h: the op fails with kPeersFailed, as MPI's
// calls on the revoked communicators do), and a host peer seen ending (reported like a failure MPI saw).
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

class HostShm {
 public:
  // Collective over `local` (the ranks of one host); `crossing` as for MpiShmWaitPolicy. Null where not used: one rank on the host, turned
  // off, or the segment could not be made or mapped on some rank (then *why_not says why, on every rank,
  // and the collectives go through MPI). `names`: each local rank's name for messages.
  static std::unique_ptr<HostShm> open(MPI_Comm local, MPI_Comm crossing, const HostShmOptions& options,
                                       std::vector<std::string> names, std::string* why_not);
  ShmGroup& group() { return *group_; }

 private:
  HostShm() = default;
  std::unique_ptr<MpiShmWaitPolicy> policy_;
  std::unique_ptr<ShmGroup> group_;  // after policy_, which its waits use
};

}  // namespace kolo
