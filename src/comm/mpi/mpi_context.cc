#include "comm/mpi/mpi_context.h"

#include <algorithm>
#include <vector>

#include "comm/mpi/mpi_fault.h"
#include "comm/mpi/mpi_status.h"
#include "comm/mpi/mpi_types.h"
#include "common/logging.h"

namespace kolo {
namespace {

// A failed creation may leave its output handle as it was: it must not be freed later.
int created(int rc, MPI_Comm* out) {
  if (rc != MPI_SUCCESS) *out = MPI_COMM_NULL;
  return rc;
}

}  // namespace

Status MpiContext::create(std::unique_ptr<MpiContext>* out) { return create(MPI_COMM_WORLD, out); }

Status MpiContext::create(MPI_Comm parent, std::unique_ptr<MpiContext>* out) {
  std::unique_ptr<MpiContext> ctx(new MpiContext());
  Status s = ctx->init(parent);
  if (!s.ok()) return s;
  *out = std::move(ctx);
  return Status::OK();
}

Status MpiContext::init(MPI_Comm parent) {
  KOLO_MPI_RETURN_IF_ERROR(created(MPI_Comm_dup(parent, &control_), &control_), "MPI_Comm_dup");
  KOLO_MPI_RETURN_IF_ERROR(created(MPI_Comm_dup(parent, &data_), &data_), "MPI_Comm_dup");
  // Errors come back as codes on kolo's communicators, to fail the op rather than abort the job.
  MPI_Comm_set_errhandler(control_, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(data_, MPI_ERRORS_RETURN);
  Topology& t = topology_;
  MPI_Comm_rank(data_, &t.rank);
  MPI_Comm_size(data_, &t.size);
  KOLO_MPI_RETURN_IF_ERROR(
      created(MPI_Comm_split_type(data_, MPI_COMM_TYPE_SHARED, t.rank, MPI_INFO_NULL, &local_), &local_),
      "MPI_Comm_split_type");
  MPI_Comm_rank(local_, &t.local_rank);
  MPI_Comm_size(local_, &t.local_size);
  KOLO_MPI_RETURN_IF_ERROR(created(MPI_Comm_split(data_, t.local_rank, t.rank, &cross_), &cross_), "MPI_Comm_split");
  MPI_Comm_set_errhandler(local_, MPI_ERRORS_RETURN);
  MPI_Comm_set_errhandler(cross_, MPI_ERRORS_RETURN);
  for (MPI_Comm c : {control_, data_, local_, cross_}) track_comm(c);

  // Hosts are named by their lowest rank; a host's index is its place among those.
  int host_root = t.rank;
  MPI_Allreduce(MPI_IN_PLACE, &host_root, 1, MPI_INT, MPI_MIN, local_);
  std::vector<int> roots(static_cast<size_t>(t.size)), sizes(static_cast<size_t>(t.size));
  KOLO_MPI_RETURN_IF_ERROR(MPI_Allgather(&host_root, 1, MPI_INT, roots.data(), 1, MPI_INT, data_),
                           "MPI_Allgather");
  KOLO_MPI_RETURN_IF_ERROR(MPI_Allgather(&t.local_size, 1, MPI_INT, sizes.data(), 1, MPI_INT, data_),
                           "MPI_Allgather");
  std::vector<int> hosts = roots;
  std::sort(hosts.begin(), hosts.end());
  hosts.erase(std::unique(hosts.begin(), hosts.end()), hosts.end());
  t.cross_size = static_cast<int>(hosts.size());
  t.cross_rank = static_cast<int>(std::lower_bound(hosts.begin(), hosts.end(), host_root) - hosts.begin());
  t.homogeneous = std::all_of(sizes.begin(), sizes.end(), [&](int s) { return s == sizes[0]; });
  host_members_.assign(hosts.size(), {});
  for (int r = 0; r < t.size; ++r) {
    const size_t h = static_cast<size_t>(std::lower_bound(hosts.begin(), hosts.end(), roots[r]) - hosts.begin());
    host_members_[h].push_back(r);
  }

  // Open MPI 5's hierarchical collectives (coll/han) make their own communicators at a communicator's first
  // allreduce. Made here, on the caller's thread, that happens before kolo's threads use these communicators:
  // made by the engine's thread while the caller made communicators of its own (the peer watch's, a process
  // set's), it crashed a survivor's restart in place now and then (in mca_coll_han_comm_create).
  for (MPI_Comm c : {control_, data_, local_, cross_}) {
    int one = 1;
    KOLO_MPI_RETURN_IF_ERROR(MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_MIN, c), "MPI_Allreduce");
  }

  Status s = create_16bit_ops(DataType::kFloat16, half_ops_[0]);
  if (s.ok()) s = create_16bit_ops(DataType::kBFloat16, half_ops_[1]);
  ops_created_ = s.ok();
  return s;
}

MpiContext::~MpiContext() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (ops_created_) {
    for (auto& row : half_ops_) {
      for (MPI_Op& op : row) {
        if (op != MPI_OP_NULL) MPI_Op_free(&op);
      }
    }
  }
  release_comm(&cross_);
  release_comm(&local_);
  release_comm(&data_);
  release_comm(&control_);
}

MPI_Datatype MpiContext::datatype(DataType dtype) const { return mpi_datatype(dtype); }

MPI_Op MpiContext::op(DataType dtype, ReduceOp op) const {
  if (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) {
    return half_ops_[dtype == DataType::kFloat16 ? 0 : 1][static_cast<int>(op)];
  }
  return mpi_builtin_op(reduction_for(dtype, op));
}

JobShape MpiContext::job_shape() const {
  int level = 0;
  MPI_Query_thread(&level);
  JobShape job = kolo::job_shape(topology_, level == MPI_THREAD_MULTIPLE);
  job.host_shm = host_shm_ != nullptr;
  return job;
}

void MpiContext::open_host_shm(const HostShmOptions& options) {
  // Messages name ranks as the job knows them (a process set's members by their job rank).
  std::vector<std::string> names;
  for (int r : host_members_[static_cast<size_t>(topology_.cross_rank)]) {
    const int job_rank = topology_.job_ranks.empty() ? r : topology_.job_ranks[static_cast<size_t>(r)];
    names.push_back("rank " + std::to_string(job_rank));
  }
  std::string why_not;
  host_shm_ = HostShm::open(local_, topology_.cross_size > 1 ? cross_ : MPI_COMM_NULL, options, std::move(names),
                            &why_not);
  if (host_shm_ && topology_.local_rank == 0) {
    KOLO_LOG(kDebug, "shared memory among this host's " << topology_.local_size << " ranks: "
                                                       << host_shm_->group().segment().bytes() << " bytes");
  }
  // Turned off, or alone on its host: nothing to say.
  if (!host_shm_ && options.enabled && topology_.local_size > 1 && topology_.local_rank == 0) {
    KOLO_LOG(kWarning, "no shared memory among this host's " << topology_.local_size << " ranks (" << why_not
                                                             << "; KOLO_SHARED_MEMORY_DIR): CPU collectives "
                                                                "inside the host go through MPI");
  }
}

}  // namespace kolo
