#include "comm/mpi/mpi_context.h"

#include <string>

#include "comm/mpi/mpi_fault.h"
#include "comm/mpi/mpi_peer_bell.h"
#include "comm/mpi/mpi_shm_wait_policy.h"
#include "comm/mpi/mpi_status.h"

namespace kolo {
namespace {

// A failed creation may leave its output handle as it was: it must not be freed later.
int created(int rc, MPI_Comm* out) {
  if (rc != MPI_SUCCESS) *out = MPI_COMM_NULL;
  return rc;
}

}  // namespace

Status MpiContext::create(MPI_Comm parent, const MpiContextOptions& options, std::unique_ptr<MpiContext>* out) {
  std::unique_ptr<MpiContext> ctx(new MpiContext());
  Status s = ctx->init(parent, options);
  if (!s.ok()) return s;
  *out = std::move(ctx);
  return Status::OK();
}

MpiContext::~MpiContext() {
  // The groups free their communicators; the reductions' ops go after them.
  cross_.reset();
  local_.reset();
  data_.reset();
  control_.reset();
}

Status MpiContext::init(MPI_Comm parent, const MpiContextOptions& options) {
  threads_multiple_ = options.threads_multiple;
  Status made = reductions_.create();
  if (!made.ok()) return made;
  MPI_Comm control = MPI_COMM_NULL, data = MPI_COMM_NULL;
  KOLO_MPI_RETURN_IF_ERROR(created(MPI_Comm_dup(parent, &control), &control), "MPI_Comm_dup");
  control_ = std::make_unique<MpiGroup>(control, &reductions_);
  KOLO_MPI_RETURN_IF_ERROR(created(MPI_Comm_dup(parent, &data), &data), "MPI_Comm_dup");
  data_ = std::make_unique<MpiGroup>(data, &reductions_);
  Topology& t = topology_;
  t.rank = data_->rank();
  MPI_Comm local = MPI_COMM_NULL, cross = MPI_COMM_NULL;
  KOLO_MPI_RETURN_IF_ERROR(
      created(MPI_Comm_split_type(data, MPI_COMM_TYPE_SHARED, t.rank, MPI_INFO_NULL, &local), &local),
      "MPI_Comm_split_type");
  local_ = std::make_unique<MpiGroup>(local, &reductions_);
  KOLO_MPI_RETURN_IF_ERROR(created(MPI_Comm_split(data, local_->rank(), t.rank, &cross), &cross), "MPI_Comm_split");
  cross_ = std::make_unique<MpiGroup>(cross, &reductions_);

  // A host is named by its lowest rank (what MPI_COMM_TYPE_SHARED put together).
  int host_root = t.rank;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Allreduce(MPI_IN_PLACE, &host_root, 1, MPI_INT, MPI_MIN, local), "MPI_Allreduce");
  std::vector<int> roots(static_cast<size_t>(data_->size()));
  KOLO_MPI_RETURN_IF_ERROR(MPI_Allgather(&host_root, 1, MPI_INT, roots.data(), 1, MPI_INT, data), "MPI_Allgather");
  std::vector<std::string> keys;
  for (int r : roots) keys.push_back(std::to_string(r));
  place(keys);

  // Open MPI 5's hierarchical collectives (coll/han) make their own communicators at a communicator's first
  // allreduce. Made here, on the caller's thread, that happens before kolo's threads use these communicators:
  // made by the engine's thread while the caller made communicators of its own (the peer watch's, a process
  // set's), it crashed a survivor's restart in place now and then (in mca_coll_han_comm_create).
  for (MPI_Comm c : {control, data, local, cross}) {
    int one = 1;
    KOLO_MPI_RETURN_IF_ERROR(MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_MIN, c), "MPI_Allreduce");
  }
  // Across hosts, negotiation's waits sleep on a doorbell.
  if (options.doorbell && t.cross_size > 1) {
    std::unique_ptr<PeerBell> bell;
    Status s = open_peer_bell(control, &bell);
    if (!s.ok()) return s;
    control_->set_bell(std::move(bell));
  }
  return Status::OK();
}

std::unique_ptr<ShmWaitPolicy> MpiContext::shm_wait_policy(std::vector<std::string> names) const {
  return std::make_unique<MpiShmWaitPolicy>(std::move(names), local_->comm(),
                                            topology_.cross_size > 1 ? cross_->comm() : MPI_COMM_NULL);
}

}  // namespace kolo
