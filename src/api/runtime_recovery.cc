// The runtime's side of a lost peer: opening the world, whether it survives a loss in place (ULFM on),
// and, in place, recover_in_place(), which shrinks the job to its survivors and starts kolo again over
// them. What a loss does meanwhile (every op failed, the engines abandoned) is the fault domain's
// (api/fault_domain.h).
#include "api/give_up_recovery.h"
#include "api/runtime.h"
#include "api/world_choice.h"
#include "comm/peer_failure.h"
#include "common/clock.h"
#include "common/deadline.h"
#include "common/logging.h"

namespace kolo {

Status Runtime::open_world(const Config& config) {
  // Called with mu_ held. The world lives as long as the process: MPI cannot start twice, and a Gloo world's
  // ranks keep their connections across shutdown() and init().
  LauncherEnv env;
  bool gloo = false;
  Status s = world_kind(config, &env, &gloo);
  if (!s.ok()) return s;
  std::unique_ptr<World>& world = worlds_[gloo ? 1 : 0];
  if (!world) {
    s = open_world_of(gloo, env, config, &world);
    if (!s.ok()) return s;
  }
  world_ = world.get();
  faults_.set_not_in_place(world_->not_in_place());
  if (world_->not_in_place().empty()) {
    set_peer_failure_hook([this](const std::string& what) { faults_.peers_failed(what); });
  } else {
    set_peer_failure_hook(nullptr);
  }
  return Status::OK();
}

ContextOptions Runtime::context_options(const Config& config) const {
  ContextOptions o;
  o.doorbell = config.doorbell;
  return o;
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
  std::vector<int> survivors;
  {
    std::lock_guard<std::mutex> lock(mu_);
    Status s = world_->shrink_to_survivors(&survivors);
    if (!s.ok()) {
      if (device) device->abort_comms(why);
      return s;
    }
    faults_.recovered();
    rearm_peer_failure();
  }
  const double shrunk = steady_seconds();
  // Its communicators, the lost peers in them, are shrunk to the survivors for the next GPU context
  // where they can be, and aborted now, not at the process's end (where destroying them would first
  // wait for the lost peers).
  World* world = world_;
  const Survivors agreed{survivors, [world](int* bits) { return world->agree_and(bits); },
                         [world] { world->progress(); }};
  SurvivingComms carried = shrink_device_comms(device.get(), agreed, why);
  // The failed ops' GPU work, stopped by the shrink or the abort, may still run what followed it on
  // kolo's stream (an unpack into the callers' tensors): it ends before the callers restore their state.
  if (device && !device->finish_work(kStreamEndSeconds, [world] { world->progress(); })) {
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
