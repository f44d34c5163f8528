#include "comm/mpi/mpi_world.h"

#include <algorithm>
#include <cstdlib>

#include "comm/mpi/mpi_context.h"
#include "comm/mpi/mpi_fault.h"
#include "comm/mpi/mpi_peer_watch.h"
#include "comm/mpi/mpi_status.h"
#include "common/logging.h"

namespace kolo {

Status MpiWorld::open(std::unique_ptr<MpiWorld>* out) {
  std::unique_ptr<MpiWorld> w(new MpiWorld());
  Status s = mpi_ensure_initialized(&w->runtime_);
  if (s.ok()) s = w->reductions_.create();
  if (s.ok()) s = w->open_job_comm();
  if (!s.ok()) return s;
  *out = std::move(w);
  return Status::OK();
}

MpiWorld::~MpiWorld() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  sets_.reset();
  if (world_ != MPI_COMM_WORLD) release_comm(&world_);
}

Status MpiWorld::open_job_comm() {
  std::string why_not;
  const bool transports_survive = transports_survive_failures(&why_not);
  if (!ulfm_built()) {
    not_in_place_ = "this MPI has no ULFM (Open MPI 5 has it)";
  } else if (!ulfm_enabled()) {
    not_in_place_ = "this job runs without ULFM's fault tolerance (start it with mpirun --with-ft ulfm --mca btl "
                    "tcp,self)";
  } else if (!transports_survive) {
    not_in_place_ = "ULFM is on, but " + why_not;
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (world_rank == 0) KOLO_LOG(kWarning, not_in_place_ << "; until then a lost peer ends the job");
  }
  if (!not_in_place_.empty()) {
    world_ = MPI_COMM_WORLD;
  } else {
    if (const int rc = MPI_Comm_dup(MPI_COMM_WORLD, &world_); rc != MPI_SUCCESS) {
      world_ = MPI_COMM_NULL;
      return mpi_status(rc, "MPI_Comm_dup (job)");
    }
    MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN);
    track_comm(world_);
    revoke_tracked_comms_on_failure();
  }
  MPI_Comm_rank(world_, &rank_);
  MPI_Comm_size(world_, &size_);
  // The job's communicator's first allreduce on this thread, before any of kolo's threads run MPI (see
  // MpiContext::init: Open MPI's coll/han makes communicators of its own at a communicator's first allreduce).
  int one = 1;
  if (const int rc = MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_MIN, world_); rc != MPI_SUCCESS) {
    return mpi_status(rc, "MPI_Allreduce (the job's communicator)");
  }
  return Status::OK();
}

bool MpiWorld::threads_multiple(std::string* why_not) const {
  if (runtime_.thread_level == MPI_THREAD_MULTIPLE) return true;
  if (why_not != nullptr) *why_not = std::string("MPI provides ") + mpi_thread_level_name(runtime_.thread_level);
  return false;
}

MpiContextOptions MpiWorld::context_options(const ContextOptions& options) const {
  MpiContextOptions o;
  o.doorbell = options.doorbell;
  o.threads_multiple = runtime_.thread_level == MPI_THREAD_MULTIPLE;
  return o;
}

Status MpiWorld::open_job_context(const ContextOptions& options, std::unique_ptr<Context>* out) {
  std::unique_ptr<MpiContext> context;
  Status s = MpiContext::create(world_, context_options(options), &context);
  if (s.ok()) *out = std::move(context);
  return s;
}

Status MpiWorld::open_sets() {
  // A peer lost meanwhile (a second failure during a recovery) comes back as such: the recovery starts again.
  MPI_Comm comm = MPI_COMM_NULL;
  if (const int rc = MPI_Comm_dup(world_, &comm); rc != MPI_SUCCESS) return mpi_status(rc, "MPI_Comm_dup (process sets)");
  sets_ = std::make_unique<MpiGroup>(comm, &reductions_);
  return Status::OK();
}

void MpiWorld::close_sets(bool peer_lost) {
  if (!sets_) return;
  if (peer_lost) {
    // Left to MPI (revoked after a failure in place, or shared with a lost peer): not freed.
    MPI_Comm comm = sets_->comm();
    untrack_comm(comm);
    sets_.release();  // NOLINT: the communicator, and the group around it, stay to the process's end
    return;
  }
  sets_.reset();
}

Status MpiWorld::open_set_context(const std::vector<int>& ranks, const ContextOptions& options,
                                  std::unique_ptr<Context>* out) {
  const bool member = std::binary_search(ranks.begin(), ranks.end(), rank_);
  MPI_Comm comm = MPI_COMM_NULL;
  if (const int rc = MPI_Comm_split(sets_->comm(), member ? 0 : MPI_UNDEFINED, rank_, &comm); rc != MPI_SUCCESS) {
    return mpi_status(rc, "MPI_Comm_split (a process set)");
  }
  out->reset();
  if (!member) return Status::OK();
  std::unique_ptr<MpiContext> context;
  Status s = MpiContext::create(comm, context_options(options), &context);
  MPI_Comm_free(&comm);  // the context made its own from it
  if (s.ok()) *out = std::move(context);
  return s;
}

Status MpiWorld::start_watch(double timeout_seconds, PeerWatch::OnLost on_lost, std::unique_ptr<PeerWatch>* out) {
  std::unique_ptr<MpiPeerWatch> watch;
  Status s = MpiPeerWatch::start(world_, timeout_seconds, std::move(on_lost), &watch);
  if (s.ok()) *out = std::move(watch);
  return s;
}

Status MpiWorld::shrink_to_survivors(std::vector<int>* survivors) {
  MPI_Comm shrunk = MPI_COMM_NULL;
  Status s = shrink_survivors(world_, &shrunk);
  if (!s.ok()) return s;
  // Each survivor's rank before, in the new order.
  MPI_Group before = MPI_GROUP_NULL, after = MPI_GROUP_NULL;
  MPI_Comm_group(world_, &before);
  MPI_Comm_group(shrunk, &after);
  int n = 0;
  MPI_Group_size(after, &n);
  std::vector<int> now(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) now[static_cast<size_t>(i)] = i;
  survivors->assign(static_cast<size_t>(n), -1);
  MPI_Group_translate_ranks(after, n, now.data(), before, survivors->data());
  MPI_Group_free(&before);
  MPI_Group_free(&after);
  // The old communicator stays (exiting threads may still hold calls on it); its ranks are gone.
  untrack_comm(world_);
  world_ = shrunk;
  track_comm(world_);
  MPI_Comm_rank(world_, &rank_);
  MPI_Comm_size(world_, &size_);
  int one = 1;  // its first allreduce on this thread, as for the job's first (open_job_comm)
  if (const int rc = MPI_Allreduce(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_MIN, world_); rc != MPI_SUCCESS) {
    return mpi_status(rc, "MPI_Allreduce (the survivors' communicator)");
  }
  return Status::OK();
}

bool MpiWorld::agree_and(int* bits) { return kolo::agree_and(world_, bits); }

void MpiWorld::progress() { drive_mpi_progress(world_); }

void MpiWorld::abort_job() {
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();  // MPI_Abort does not return; if it did, the job must still end
}

void MpiWorld::finish(bool peer_lost) {
  if (!peer_lost) mpi_finalize_if_owned(runtime_);
}

}  // namespace kolo
