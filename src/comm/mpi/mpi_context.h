// An instance's Context (comm/context.h) over MPI: kolo's own communicators, so its traffic never
// matches the application's: one for negotiation, one for data, and the host-local and cross-host splits
// of the data communicator, each an MpiGroup. A host is what MPI_COMM_TYPE_SHARED says it is.
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "comm/context.h"
#include "comm/mpi/mpi_group.h"
#include "comm/mpi/mpi_reductions.h"

namespace kolo {

struct MpiContextOptions {
  bool doorbell = true;         // across hosts, negotiation's waits sleep on a doorbell (comm/mpi/mpi_peer_bell.h)
  bool threads_multiple = true;  // MPI provides MPI_THREAD_MULTIPLE
};

class MpiContext : public Context {
 public:
  // Over `parent`'s ranks (the job's, or a process set's), collective over them; ranks in the topology
  // and host_members are then ranks of `parent`.
  static Status create(MPI_Comm parent, const MpiContextOptions& options, std::unique_ptr<MpiContext>* out);
  ~MpiContext() override;

  Group& control() const override { return *control_; }
  Group& data() const override { return *data_; }
  Group& local() const override { return *local_; }
  Group& cross() const override { return *cross_; }
  const char* transport() const override { return "MPI"; }

 protected:
  std::unique_ptr<ShmWaitPolicy> shm_wait_policy(std::vector<std::string> names) const override;

 private:
  MpiContext() = default;
  Status init(MPI_Comm parent, const MpiContextOptions& options);

  MpiReductions reductions_;  // before the groups, which use it
  std::unique_ptr<MpiGroup> control_, data_, local_, cross_;
};

}  // namespace kolo
