// kolo's own MPI communicators, so its traffic never matches the application's: one for
// negotiation, one for data, and the host-local and cross-host splits of the data communicator.
// Also the MPI types and reduction ops for every kolo dtype (16-bit floats need user ops).
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "comm/allreduce_choice.h"
#include "comm/mpi/host_shm.h"
#include "comm/topology.h"
#include "kolo/types.h"

namespace kolo {

class MpiContext {
 public:
  // MPI must be initialized. Collective over MPI_COMM_WORLD.
  static Status create(std::unique_ptr<MpiContext>* out);
  // The same over `parent`'s ranks (a process set's), collective over them; ranks in the topology
  // and host_members are then ranks of `parent`.
  static Status create(MPI_Comm parent, std::unique_ptr<MpiContext>* out);
  ~MpiContext();
  MpiContext(const MpiContext&) = delete;
  MpiContext& operator=(const MpiContext&) = delete;

  MPI_Comm control() const { return control_; }
  MPI_Comm data() const { return data_; }
  MPI_Comm local() const { return local_; }   // ranks on this host
  MPI_Comm cross() const { return cross_; }   // ranks with this local rank, one per host
  const Topology& topology() const { return topology_; }
  // What comm/allreduce_choice.h needs of the job: its hosts, and whether MPI allows calls from several threads.
  JobShape job_shape() const;
  // A process set's context: which set it is and its members' job ranks (set-rank order), so that
  // what is built on it (a GPU communicator's members) can name job ranks.
  void mark_process_set(int id, std::vector<int> job_ranks) {
    topology_.process_set = id;
    topology_.job_ranks = std::move(job_ranks);
  }
  // Ranks on each host, hosts in cross-rank order, ranks in local-rank order.
  const std::vector<std::vector<int>>& host_members() const { return host_members_; }

  // The host's ranks as a shared-memory group (comm/mpi/host_shm.h), collective over them: after
  // create(), before the collectives are made. Null where not used (the warning says why, once per host).
  void open_host_shm(const HostShmOptions& options);
  ShmGroup* host_shm() const { return host_shm_ ? &host_shm_->group() : nullptr; }

  MPI_Datatype datatype(DataType dtype) const;
  MPI_Op op(DataType dtype, ReduceOp op) const;

 private:
  MpiContext() = default;
  Status init(MPI_Comm parent);

  MPI_Comm control_ = MPI_COMM_NULL;
  MPI_Comm data_ = MPI_COMM_NULL;
  MPI_Comm local_ = MPI_COMM_NULL;
  MPI_Comm cross_ = MPI_COMM_NULL;
  Topology topology_;
  std::vector<std::vector<int>> host_members_;
  std::unique_ptr<HostShm> host_shm_;
  // [fp16 or bf16][reduce op]: user ops, created once per context.
  MPI_Op half_ops_[2][kNumReduceOps];
  bool ops_created_ = false;
};

}  // namespace kolo
