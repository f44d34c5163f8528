// An instance's ranks on one host, opened as a shared-memory group (comm/shm/shm_group.h) over the host's
// group: the agreement that every rank of the host mapped the segment. What its waits do when the job
// loses a peer is the world's (its ShmWaitPolicy). A Context opens one over its host's group, so membership
// follows the instance (a process set's has its own).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "comm/group.h"
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

class HostShm {
 public:
  // Collective over `local` (the ranks of one host). Null where not used: one rank on the host, turned
  // off, or the segment could not be made or mapped on some rank (then *why_not says why, on every rank,
  // and the collectives go through the transport).
  static std::unique_ptr<HostShm> open(Group& local, const HostShmOptions& options,
                                       std::unique_ptr<ShmWaitPolicy> policy, std::string* why_not);
  ShmGroup& group() { return *group_; }

 private:
  HostShm() = default;
  std::unique_ptr<ShmWaitPolicy> policy_;
  std::unique_ptr<ShmGroup> group_;  // after policy_, which its waits use
};

}  // namespace kolo
