#include "api/fault_domain.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "comm/give_up.h"
#include "comm/peer_failure.h"
#include "common/logging.h"

namespace kolo {

void FaultDomain::set_not_in_place(std::string why) {
  std::lock_guard<std::mutex> lock(mu_);
  not_in_place_ = std::move(why);
}

bool FaultDomain::in_place() const {
  std::lock_guard<std::mutex> lock(mu_);
  return not_in_place_.empty();
}

std::string FaultDomain::not_in_place() const {
  std::lock_guard<std::mutex> lock(mu_);
  return not_in_place_;
}

void FaultDomain::set_rank(int job_rank) {
  std::lock_guard<std::mutex> lock(mu_);
  rank_ = job_rank;
}

void FaultDomain::add_engine(std::shared_ptr<Engine> engine) {
  std::lock_guard<std::mutex> lock(mu_);
  engines_.push_back(std::move(engine));
}

void FaultDomain::forget_engine(const std::shared_ptr<Engine>& engine) {
  std::lock_guard<std::mutex> lock(mu_);
  engines_.erase(std::remove(engines_.begin(), engines_.end(), engine), engines_.end());
}

std::vector<std::shared_ptr<Engine>> FaultDomain::engines() const {
  std::lock_guard<std::mutex> lock(mu_);
  return engines_;
}

void FaultDomain::keep(std::shared_ptr<void> thing) {
  std::lock_guard<std::mutex> lock(mu_);
  kept_.push_back(std::move(thing));
}

Status FaultDomain::start_watch(World& world, double timeout_seconds) {
  std::unique_ptr<PeerWatch> watch;
  Status s = world.start_watch(timeout_seconds, [this](const std::string& why) { peer_lost(why); }, &watch);
  if (!s.ok()) return s;
  std::lock_guard<std::mutex> lock(mu_);
  watch_ = std::move(watch);
  world_ = &world;
  return Status::OK();
}

void FaultDomain::stop_watch() {
  std::unique_ptr<PeerWatch> watch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    watch = std::move(watch_);
  }
  // Outside the lock: stopping waits for the watch's thread, which may be reporting a loss here.
  if (watch && !watch->stop()) keep(std::shared_ptr<PeerWatch>(watch.release()));
}

void FaultDomain::peer_lost(const std::string& why) {
  if (in_place()) {
    // In place: the world revokes kolo's communicators (every survivor's calls return) and goes on without
    // the peer.
    report_peer_failure("the peer watch: " + why);
    return;
  }
  size_t failed = 0;
  const Status lost = fail_everything(&failed, [&] {
    lost_ = Status::Aborted("kolo stopped on rank " + std::to_string(rank_) + ": " + why +
                            " (frozen, or its host unreachable; KOLO_PEER_TIMEOUT_SECONDS); the job must end");
    is_lost_.store(true, std::memory_order_release);
    return lost_;
  });
  KOLO_LOG(kError, lost.message() << "; " << failed << " op(s) in flight failed");
  give_up_waits(lost.message());
  end_if_a_caller_is_stuck(lost.message());
}

void FaultDomain::end_if_a_caller_is_stuck(const std::string& why) {
  // A caller that drives a cycle (a blocking call, Engine::drive) waits only in calls that give up, and
  // has left its cycle by now. A last guard: one still inside a cycle (stuck where nothing reaches it)
  // would wait for ever, so the job ends, as it must.
  World* world = nullptr;
  {
    std::lock_guard<std::mutex> lock(mu_);
    world = world_;
  }
  std::thread([engines = engines(), why, world] {
    std::this_thread::sleep_for(std::chrono::seconds(2));
    for (const auto& e : engines) {
      if (!e->driven() || world == nullptr) continue;
      KOLO_LOG(kError, why << "; a blocking call on this rank is still waiting on the lost peer: ending the job");
      world->abort_job();
    }
  }).detach();
}

void FaultDomain::peers_failed(const std::string& what) {
  size_t n = 0;
  const Status failed = fail_everything(&n, [&] {
    peers_failed_ = Status::PeersFailed(std::string("kolo: ") + kPeersFailedWords + " and go on without it (seen " +
                                        "by rank " + std::to_string(rank_) + ": " + what +
                                        "; kolo.elastic does it, else call recover_in_place)");
    return peers_failed_;
  });
  KOLO_LOG(kWarning, failed.message() << "; " << n << " op(s) in flight failed");
}

Status FaultDomain::fail_everything(size_t* failed_ops, const std::function<Status()>& why) {
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
  *failed_ops = handles_->fail_pending(status);
  return status;
}

Status FaultDomain::lost() const {
  std::lock_guard<std::mutex> lock(mu_);
  return lost_;
}

Status FaultDomain::failure_in_place() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peers_failed_;
}

void FaultDomain::recovered() {
  std::lock_guard<std::mutex> lock(mu_);
  peers_failed_ = Status::OK();
}

void FaultDomain::add_failed_device(std::shared_ptr<DeviceContext> device) {
  std::lock_guard<std::mutex> lock(mu_);
  failed_devices_.push_back(std::move(device));
}

std::shared_ptr<DeviceContext> FaultDomain::take_failed_device() {
  std::lock_guard<std::mutex> lock(mu_);
  std::shared_ptr<DeviceContext> device = failed_devices_.empty() ? nullptr : failed_devices_.back();
  failed_devices_.clear();
  return device;
}

}  // namespace kolo
