// The MPI world (comm/world.h): a job started by an MPI launcher (mpirun, kolorun, Slurm's srun --mpi=pmix).
// MPI's lifetime around kolo's (initialized with the thread level kolo's threads need where the application
// has not, finalized only if kolo initialized it), the job's communicator (MPI_COMM_WORLD, or with ULFM a
// duplicate that a recovery replaces with its survivors), contexts over it and its splits, the peer watch
// over MPI's point-to-point messages, and ULFM's survival of a lost peer in place.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "comm/mpi/mpi_context.h"
#include "comm/mpi/mpi_group.h"
#include "comm/mpi/mpi_reductions.h"
#include "comm/mpi/mpi_runtime.h"
#include "comm/world.h"

namespace kolo {

class MpiWorld : public World {
 public:
  // Initializes MPI where needed and opens the job's communicator. Collective over MPI_COMM_WORLD.
  static Status open(std::unique_ptr<MpiWorld>* out);
  ~MpiWorld() override;

  const char* name() const override { return "MPI"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  bool threads_multiple(std::string* why_not) const override;
  Status open_job_context(const ContextOptions& options, std::unique_ptr<Context>* out) override;
  Status open_sets() override;
  Group& sets() override { return *sets_; }
  void close_sets(bool peer_lost) override;
  Status open_set_context(const std::vector<int>& ranks, const ContextOptions& options,
                          std::unique_ptr<Context>* out) override;
  Status start_watch(double timeout_seconds, PeerWatch::OnLost on_lost, std::unique_ptr<PeerWatch>* out) override;
  std::string not_in_place() const override { return not_in_place_; }
  Status shrink_to_survivors(std::vector<int>* survivors) override;
  bool agree_and(int* bits) override;
  void progress() override;
  [[noreturn]] void abort_job() override;
  void finish(bool peer_lost) override;

 private:
  MpiWorld() = default;
  Status open_job_comm();
  MpiContextOptions context_options(const ContextOptions& options) const;

  MpiRuntime runtime_;
  MpiReductions reductions_;  // the sets' group's
  MPI_Comm world_ = MPI_COMM_NULL;
  std::string not_in_place_;
  int rank_ = 0, size_ = 1;
  std::unique_ptr<MpiGroup> sets_;
};

}  // namespace kolo
