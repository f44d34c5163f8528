// The runtime when a peer is lost: without ULFM every op fails and the job must end; in place (ULFM on)
// the ops fail with kPeersFailed and recover_in_place() shrinks the job to its survivors and starts
// kolo again over them. The rest of Runtime is in runtime.cc.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <thread>

#include "api/give_up_recovery.h"
#include "api/runtime.h"
#include "comm/mpi/mpi_fault.h"
#include "comm/mpi/mpi_status.h"
#include "common/clock.h"
#include "common/deadline.h"
#include "common/logging.h"

namespace kolo {

void Runtime::peer_lost(const std::string& why) {
  if (in_place()) {
    // ULFM: revoke kolo's communicators (every survivor's calls return) and go on without the peer.
    report_peer_failure("the peer watch: " + why);
    return;
  }
  size_t failed = 0;
  const Status lost = fail_everything(&failed, [&] {
    lost_ = Status::Aborted("kolo stopped on rank " + std::to_string(job_rank_) + ": " + why +
                            " (frozen, or its host unreachable; KOLO_PEER_TIMEOUT_SECONDS); the job must end");
    return lost_;
  });
  KOLO_LOG(kError, lost.message() << "; " << failed << " op(s) in flight failed");
  give_up_mpi_waits(lost.message());
  end_if_a_caller_is_stuck(lost.message());
}

void Runtime::end_if_a_caller_is_stuck(const std::string& why) {
  std::vector<std::shared_ptr<Engine>> engines;
  {
    std::lock_guard<std::mutex> lock(mu_);
    engines = engines_;
  }
  // A caller that drives a cycle (a blocking call, Engine::drive) waits only in calls that give up, and
  // has left its cycle by now. A last guard: one still inside a cycle (stuck where nothing reaches it)
  // would wait for ever, so the job ends, as it must.
  std::thread([engines, why] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    for (const auto& e : engines) {
      if (!e->driven()) continue;
      KOLO_LOG(kError, why << "; a blocking call on this rank is still inside MPI with the lost peer: ending the job");
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }).detach();
}

Status Runtime::fail_everything(size_t* failed_ops, const std::function<Status()>& why) {
  std::vector<std::shared_ptr<Engine>> engines;
  Status status;
  {
    std::lock_guard<std::mutex> lock(mu_);
    status = why();
    engines = engines_;
    // Their threads may still be inside MPI: the engines stay to the process's end.
    for (const auto& e : engines_) kept_.push_back(e);
  }
  for (const auto& e : engines) e->abandon(status);
  // Outside the lock: callbacks may call into kolo (and are told the same).
  *failed_ops = handles_.fail_pending(status);
  return status;
}

Status Runtime::open_world() {
  // Called with mu_ held, MPI initialized.
  if (world_ != MPI_COMM_NULL) return Status::OK();
  std::string why_not;
  const bool transports_survive = transports_survive_failures(&why_not);
  not_in_place_.clear();
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
    return Status::OK();
  }
  if (const int rc = MPI_Comm_dup(MPI_COMM_WORLD, &world_); rc != MPI_SUCCESS) {
    world_ = MPI_COMM_NULL;
    return mpi_status(rc, "MPI_Comm_dup (job)");
  }
  MPI_Comm_set_errhandler(world_, MPI_ERRORS_RETURN);
  track_comm(world_);
  set_peer_failure_hook([this](const std::string& what) { peers_failed(what); });
  return Status::OK();
}

bool Runtime::in_place() {
  std::lock_guard<std::mutex> lock(mu_);
  return not_in_place_.empty();
}

void Runtime::peers_failed(const std::string& what) {
  size_t n = 0;
  const Status failed = fail_everything(&n, [&] {
    peers_failed_ = Status::PeersFailed(std::string("kolo: ") + kPeersFailedWords + " and go on without it (seen " +
                                        "by rank " + std::to_string(job_rank_) + ": " + what +
                                        "; kolo.elastic does it, else call recover_in_place)");
    return peers_failed_;
  });
  KOLO_LOG(kWarning, failed.message() << "; " << n << " op(s) in flight failed");
}

bool Runtime::failed_in_place() {
  std::lock_guard<std::mutex> lock(mu_);
  return !peers_failed_.ok();
}

Status Runtime::recover_in_place() {
  // How long the failed ops' GPU work may take to end once the shrink has stopped it.
  constexpr double kStreamEndSeconds = 10.0;
  double bound = 0;
  int rank = 0, size = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!not_in_place_.empty()) return Status::Unsupported("recover_in_place: " + not_in_place_);
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
  std::vector<std::shared_ptr<Engine>> engines;
  {
    std::lock_guard<std::mutex> lock(mu_);
    engines = engines_;
  }
  shutdown();
  // Their communicators are revoked, so their threads end at once; none may report the revocation
  // once the next failure is armed.
  for (const auto& e : engines) {
    if (!e->wait_ended(10.0)) {
      return Status::Internal("recover_in_place: kolo's engine did not end after the revocation");
    }
    forget_engine(e);
  }
  // No engine uses the old GPU context any more.
  std::shared_ptr<DeviceContext> device;
  Status why;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!failed_devices_.empty()) device = failed_devices_.back();
    failed_devices_.clear();
    why = peers_failed_;
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
    peers_failed_ = Status::OK();
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

Status Runtime::lost_status() {
  std::lock_guard<std::mutex> lock(mu_);
  return lost_;
}

void Runtime::keep_after_loss(std::shared_ptr<void> thing) {
  std::lock_guard<std::mutex> lock(mu_);
  kept_.push_back(std::move(thing));
}

void Runtime::forget_engine(const std::shared_ptr<Engine>& engine) {
  std::lock_guard<std::mutex> lock(mu_);
  engines_.erase(std::remove(engines_.begin(), engines_.end(), engine), engines_.end());
}

}  // namespace kolo
