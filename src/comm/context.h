// The ranks of one instance (the job, or a process set) as kolo's collectives see them: the groups the
// instance has to itself (negotiation, data, this host's ranks, the ranks of this local rank across
// hosts), where this rank sits among them, and the host's shared memory. Made by a world (comm/world.h):
// MPI's communicators (comm/mpi/mpi_context.h) or Gloo's pairs (comm/gloo/); the collectives
// (comm/host/) and the device path (comm/device/) use only this.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "comm/allreduce_choice.h"
#include "comm/group.h"
#include "comm/host/host_shm.h"
#include "comm/topology.h"

namespace kolo {

class Context {
 public:
  virtual ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  virtual Group& control() const = 0;  // negotiation only
  virtual Group& data() const = 0;     // the collectives' data
  virtual Group& local() const = 0;    // ranks on this host, in local-rank order
  virtual Group& cross() const = 0;    // ranks with this local rank, one per host, in host order
  // "MPI" or "GLOO": the start of the collectives' names in the timeline.
  virtual const char* transport() const = 0;

  const Topology& topology() const { return topology_; }
  // Ranks on each host, hosts in cross-rank order, ranks in local-rank order.
  const std::vector<std::vector<int>>& host_members() const { return host_members_; }
  // What comm/allreduce_choice.h needs of the job.
  JobShape job_shape() const;
  // A process set's context: which set it is and its members' job ranks (set-rank order), so that
  // what is built on it (a GPU communicator's members, messages) can name job ranks.
  void mark_process_set(int id, std::vector<int> job_ranks) {
    topology_.process_set = id;
    topology_.job_ranks = std::move(job_ranks);
  }
  // A member's job rank (set-rank order for a process set).
  int job_rank(int rank) const {
    return topology_.job_ranks.empty() ? rank : topology_.job_ranks[static_cast<size_t>(rank)];
  }

  // The host's ranks as a shared-memory group (comm/host/host_shm.h), collective over them: after the
  // context is made, before the collectives are. Null where not used (the warning says why, once per host).
  void open_host_shm(const HostShmOptions& options);
  ShmGroup* host_shm() const { return host_shm_ ? &host_shm_->group() : nullptr; }

 protected:
  Context() = default;
  // Where every rank of data() sits, from each rank's host (`host_keys`, by rank: equal keys, one host):
  // local ranks in rank order, hosts ordered by their lowest rank.
  void place(const std::vector<std::string>& host_keys);
  // What the shared memory's waits do when the job loses a peer, in this world's terms.
  virtual std::unique_ptr<ShmWaitPolicy> shm_wait_policy(std::vector<std::string> names) const = 0;

  Topology topology_;
  std::vector<std::vector<int>> host_members_;
  bool threads_multiple_ = true;  // callers' threads may run collectives beside kolo's own

 private:
  std::unique_ptr<HostShm> host_shm_;
};

}  // namespace kolo
