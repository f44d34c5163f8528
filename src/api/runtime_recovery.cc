// The runtime's side of a lost peer: whether the job's communicator survives one (ULFM on), and, in place,
// recover_in_place(), which shrinks the job to its survivors and starts kolo again over them. What a loss
// does meanwhile (every op failed, the engines abandoned) is the fault domain's (api/fault_domain.h).
#include <mpi.h>

#include "api/give_up_recovery.h"
#include "api/runtime.h"
#include "comm/mpi/mpi_fault.h"
#include "comm/mpi/mpi_status.h"
#include "common/clock.h"
#include "common/deadline.h"
#include "common/logging.h"

namespace kolo {

Status Runtime::open_world() {
  // Called with mu_ held, MPI initialized.
  if (world_ != MPI_COMM_NULL) return Status::OK();
  std::string why_not;
  const bool transports_survive = transports_survive_failures(&why_not);
  std::string not_in_place;
  if (!ulfm_built()) {
    not_in_place = "this MPI has no ULFM (Open MPI 5 has it)";
  } else if (!ulfm_enabled()) {
    not_in_place = "this job runs without ULFM's fault tolerance (start it with mpirun --with-ft ulfm --mca btl "
                   "tcp,self)";
  } else if (!transports_survive) {
    not_in_place = "ULFM is on, but " + why_not;
    int world_rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    if (world_rank == 0) KOLO_LOG(kWarning, not_in_place << "; until then a lost peer ends the job");
  }
  faults_.set_not_in_place(not_in_place);
  if (!not_in_place.empty()) {
    world_ = MPI_COMM_WORLD;
    return Status::OK();
  }
  if (const int rc = MPI_Comm_dup(MPI_COMM_WORLD, &world_); rc != MPI_SUCCESS) {
    world_ = MPI_COMM_NULL;
    return mpi_status(rc, "MPI_Comm_dup (job)");
  }
  MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN);
  track_comm(world_);
  set_peer_failure_hook([this](const std::string& what) { faults_.peers_failed(what); });
  return Status::OK();
}

bool Runtime::in_place() { return faults_.in_place(); }

Status Runtime::recover_in_place() {
  // How long the failed ops' GPU work may take to end once the shrink has stopped it.
  constexpr double kStreamEndSeconds = 10.0;
  double bound = 0;
  int rank = 0, size = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!faults_.in_place()) return Status::Unsupported("recover_in_place: " + faults_.not_in_place());
    bound = base_config_.recovery_timeout_seconds;
    rank = job_rank_;
    size = world_size_;
  }
  // A lost peer that MPI never declares failed (its host cut off, ULFM's detector off) leaves the shrink
  // waiting for good, and no call here can be interrupted: past the bound the rank exits, and kolorun
  // restarts the job from its last commit.
  const Deadline deadline(bound, [rank, size, bound] { give_up_recovery(rank, size, bound); });
  const double start = steady_seconds();
  wait_for_failure_hooks();  // every op in flight has been failed, every engine abandoned
  const std::vector<std::shared_ptr<Engine>> engines = faults_.engines();
  shutdown();
  // Their communicators are revoked, so their threads end at once; none may report the revocation
  // once the next failure is armed.
  for (const auto& e : engines) {
    if (!e->wait_ended(10.0)) {
      return Status::Internal("recover_in_place: kolo's engine did not end after the revocation");
    }
    faults_.forget_engine(e);
  }
  // No engine uses the old GPU context any more.
  const std::shared_ptr<DeviceContext> device = faults_.take_failed_device();
  const Status why = faults_.failure_in_place();
  {
    std::lock_guard<std::mutex> lock(mu_);
    // A recovery that did not finish (another peer lost meanwhile) left what it shrank: that peer is in them.
    for (auto& c : carried_.group) {
      if (c) c->abort();
    }
    carried_ = SurvivingComms();
  }
  const double stopped = steady_seconds();
  MPI_Comm survivors = MPI_COMM_NULL;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Status s = shrink_survivors(world_, &survivors);
    if (!s.ok()) {
      if (device) device->abort_comms(why);
      return s;
    }
    // The old communicator stays (exiting threads may still hold calls on it); its ranks are gone.
    untrack_comm(world_);
    world_ = survivors;
    track_comm(world_);
    faults_.recovered();
    rearm_peer_failure();
  }
  const double shrunk = steady_seconds();
  // Its communicators, the lost peers in them, are shrunk to the survivors for the next GPU context
  // where they can be, and aborted now, not at the process's end (where destroying them would first
  // wait for the lost peers).
  SurvivingComms carried = shrink_device_comms(device.get(), survivors, why);
  // The failed ops' GPU work, stopped by the shrink or the abort, may still run what followed it on
  // kolo's stream (an unpack into the callers' tensors): it ends before the callers restore their state.
  if (device && !device->finish_work(kStreamEndSeconds, [survivors] { drive_mpi_progress(survivors); })) {
    KOLO_LOG(kWarning, "recover_in_place: kolo's GPU stream did not end within " << kStreamEndSeconds
                                                                                  << " s of the shrink");
  }
  const double devices_shrunk = steady_seconds();
  KOLO_LOG(kInfo, "recovered in place: the job goes on without its lost ranks (stop "
                      << stopped - start << " s, shrink " << shrunk - stopped << " s, "
                      << carried.shrunk << " GPU communicator(s) shrunk in " << devices_shrunk - shrunk << " s)");
  {
    std::lock_guard<std::mutex> lock(mu_);
    carried_ = std::move(carried);
  }
  Settings overrides;
  {
    std::lock_guard<std::mutex> lock(mu_);
    overrides = overrides_;
  }
  return init(overrides);
}

}  // namespace kolo
