#include "engine/engine.h"

#include <algorithm>
#include <future>
#include <thread>

#include "common/clock.h"
#include "common/logging.h"
#include "common/ranks.h"
#include "common/this_thread.h"
#include "engine/rider.h"

namespace kolo {

Engine::Engine(const Config& config, const Topology& topology, std::unique_ptr<ControlChannel> channel,
               std::unique_ptr<CollectiveRegistry> registry, std::unique_ptr<Timeline> timeline,
               HandleTable* handles)
    : config_(config),
      topology_(topology),
      names_(topology.job_ranks, topology.process_set),
      channel_(std::move(channel)),
      registry_(std::move(registry)),
      timeline_(std::move(timeline)),
      mark_cycles_(config.timeline_mark_cycles),
      stamps_(timeline_ != nullptr),
      handles_(handles),
      controller_(channel_.get(), config_, steady_seconds, names_),
      executor_(registry_.get(), &queue_, handles_, timeline_.get(), config_.fusion_threshold_bytes,
                names_.job_rank(topology.rank),
                config_.join_average_over_contributors, work_signal_) {
  // A driving caller ends the work it launched itself (wait_for_launched_work): waking this thread too
  // would take a core from it. Work it leaves running makes drive() wake this thread as it returns.
  work_signal_->listen([this] {
    if (!turns_.claimed()) queue_.device_done();
  });
  // A small async op not waited for is taken up within the cycle time, as Horovod takes up every op;
  // with a cycle time under 0.1 ms, at once (napping that often would cost more than the wakes it spares).
  constexpr double kLeastSoonMs = 0.1;
  if (config_.caller_drives && config_.cycle_time_ms >= kLeastSoonMs) {
    queue_.set_soon_seconds(config_.cycle_time_ms / 1000.0);
  }
  if (config_.autotune.enabled) {
    const TunedSettings start{config_.fusion_threshold_bytes, config_.segment_bytes, config_.zero_copy_bytes,
                              config_.hierarchical_allreduce && topology.homogeneous};
    tuner_ = std::make_unique<Autotuner>(config_.autotune, start, Autotuner::tunes_hierarchy(config_, topology),
                                         topology.rank);
  }
}

Engine::~Engine() {
  stop();
  work_signal_->listen({});  // work still running may fire it later: the queue is gone by then
}

void Engine::start() {
  life_.started();
  std::promise<void> started;
  std::future<void> ready = started.get_future();
  thread_ = std::thread([this, &started] {
    prepare_thread();
    started.set_value();
    loop();
  });
  ready.wait();  // init() returns with the thread as configured
}

void Engine::prepare_thread() {
  name_this_thread(topology_.process_set == 0 ? "kolo" : "kolo-set-" + std::to_string(topology_.process_set));
  tighten_this_thread_timers();
  if (config_.thread_nice > 0) {
    const Status s = set_this_thread_nice(static_cast<int>(config_.thread_nice));
    if (!s.ok()) KOLO_LOG(kWarning, "KOLO_THREAD_NICE: kolo's thread keeps its priority: " << s.message());
  }
}

Status Engine::submit(std::unique_ptr<TensorEntry> entry, bool caller_drives) {
  const bool quiet = caller_drives && config_.caller_drives;
  if (quiet) turns_.claim();  // its drive() ends the turn
  TensorQueue::Announce announce = quiet ? TensorQueue::Announce::kQuiet : TensorQueue::Announce::kWake;
  if (!quiet && waited_soon(*entry)) announce = TensorQueue::Announce::kSoon;
  Status s = queue_.push(std::move(entry), announce);
  // Its thread may never take the op up (abandon() came after the caller found this engine).
  if (s.ok()) s = life_.refusal();
  return s;
}

bool Engine::waited_soon(const TensorEntry& entry) const {
  // A small async allreduce of a CPU tensor (a metric, a loss: one that may ride on the negotiation) is
  // usually waited for at once, and its wait drives it. A GPU one wakes the thread as before: on the host
  // double no gain stood out from the double's own variation.
  return config_.caller_drives && entry.input.device.type == DeviceType::kCPU &&
         may_ride(entry.request, static_cast<size_t>(config_.small_op_bytes));
}

void Engine::stop() {
  life_.ask_stop();
  queue_.wake();
  if (!thread_.joinable()) return;
  life_.wait_ended_or_abandoned();
  if (life_.running()) {
    thread_.detach();  // abandoned, maybe stuck in MPI on a lost peer
  } else {
    thread_.join();
  }
}

bool Engine::wait_ended(double seconds) { return life_.wait_ended(seconds); }

void Engine::abandon(const Status& why) {
  life_.abandon(why);
  timeline_handover_.close();  // its thread may never take one
  queue_.wake();
}

void Engine::fail_all(const std::string& why, StatusCode code) {
  // Work still running on a device writes to the callers' memory: let it end (or stop it) before
  // the callers hear that their ops are over. After a peer lost in place, what waits for it never
  // ends (a frozen peer's NCCL kernels) and everything is rolled back: stopped at once.
  executor_.drain(code == StatusCode::kPeersFailed ? 0.0 : kDrainSeconds, Status(code, why));
  for (auto& e : queue_.close(why, code)) {
    const std::string message = "tensor '" + e->request.name + "' did not run: " + why;
    Executor::finish(std::move(e), Status(code, message), handles_, nullptr);
  }
}

Status Engine::start_timeline(const std::string& path, bool mark_cycles) {
  std::unique_ptr<Timeline> t;
  const int job_rank = topology_.job_ranks.empty() ? topology_.rank : topology_.job_ranks[topology_.rank];
  Status s = Timeline::open(path, topology_.rank, &t, -1.0, job_rank);
  if (!s.ok()) return s;
  hand_over_timeline(std::move(t), mark_cycles);
  return Status::OK();
}

void Engine::stop_timeline() { hand_over_timeline(nullptr, false); }

void Engine::hand_over_timeline(std::unique_ptr<Timeline> timeline, bool mark_cycles) {
  if (timeline) stamps_ = true;
  const uint64_t ticket = timeline_handover_.ask(std::move(timeline), mark_cycles);
  queue_.wake();
  timeline_handover_.wait_taken(ticket);  // the engine switches at its next cycle
}

void Engine::switch_timeline() {
  timeline_handover_.take_if_handed([this](std::unique_ptr<Timeline> next, bool mark_cycles) {
    if (timeline_) timeline_->close();
    timeline_ = std::move(next);
    mark_cycles_ = mark_cycles;
    executor_.set_timeline(timeline_.get());
  });
}

bool Engine::run_cycle(bool* idle, bool on_caller) {
  const CycleTurns::Cycle in_cycle;
  if (handed_) {
    const std::unique_ptr<Handed> handed = std::move(handed_);
    executor_.run(handed->responses, handed->agreed_at, handed->joined);
    executor_.poll();
    *idle = false;
    return true;
  }
  // A caller that submitted after the engine thread's check in loop() drives its op: the cycle is its
  // (checked again here, under the cycle lock, sparing this cycle's work; take_new_unless_driven below
  // closes the window after this check).
  if (!on_caller && turns_.claimed()) {
    *idle = false;
    return true;
  }
  switch_timeline();
  apply_tuning();
  CycleResult& result = cycle_result_;
  // A caller that pushed its op after the check above drives it: its cycle takes the op up, not this one.
  const size_t submitted =
      on_caller ? queue_.take_new(&submitted_) : queue_.take_new_unless_driven(&submitted_, turns_.callers());
  if (submitted == TensorQueue::kLeftToCaller) {
    *idle = false;
    return true;
  }
  const Status s = controller_.cycle(submitted_.data(), submitted, life_.stop_asked(), &result,
                                     [this](uint32_t position, const Response& r, std::string* rider) {
                                       TensorEntry* e = queue_.find(r.name);
                                       if (e != nullptr) load_rider(position, r, *e, rider);
                                       return e != nullptr;
                                     });
  return conclude_cycle(s, idle, on_caller);
}

bool Engine::conclude_cycle(const Status& cycle_status, bool* idle, bool on_caller, bool ridden_done) {
  CycleResult& result = cycle_result_;
  Status s = cycle_status;
  if (!s.ok()) {
    // A lost peer survived in place (ULFM) was announced already: not an error of this rank's.
    if (s.code() == StatusCode::kPeersFailed) {
      KOLO_LOG(kInfo, "negotiation failed, stopping kolo on this rank: " << s.message());
    } else {
      KOLO_LOG(kError, "negotiation failed, stopping kolo on this rank: " << s.message());
    }
    fail_all(names_.prefix() + "negotiation failed on " + names_.rank(topology_.rank) + ": " + s.message(),
             s.code() == StatusCode::kPeersFailed ? StatusCode::kPeersFailed : StatusCode::kInternal);
    life_.end();
    return false;
  }
  if (result.shutdown) {
    fail_all(names_.prefix() + "kolo was shut down (shutdown() called on " + names_.ranks(result.shutdown_ranks) + ")",
             StatusCode::kAborted);
    life_.end();
    return false;
  }
  if (tuner_ && !tuner_->done()) {
    s = observe_tuning(result);
    if (!s.ok()) {
      KOLO_LOG(kError, "autotuning failed, stopping kolo on this rank: " << s.message());
      fail_all(names_.prefix() + "autotuning failed on " + names_.rank(topology_.rank) + ": " + s.message(),
               StatusCode::kInternal);
      life_.end();
      return false;
    }
  }
  if (result.ridden && !ridden_done) executor_.finish_ridden(result.ridden_response, result.rider, topology_.size);
  if (!result.responses.empty()) {
    if (timeline_ && mark_cycles_) timeline_->cycle(steady_seconds());
    const bool joined = std::find(result.joined_ranks.begin(), result.joined_ranks.end(), topology_.rank) !=
                        result.joined_ranks.end();
    if (on_caller && (joined || !executor_.runs_on_caller(result.responses))) {
      handed_ = std::make_unique<Handed>(Handed{std::move(result.responses), steady_seconds(), joined});
      *idle = false;
      return true;
    }
    executor_.run(result.responses, steady_seconds(), joined);
  }
  executor_.poll();
  if (timeline_) timeline_->flush_if_due(steady_seconds());
  // (A driving caller's loop asks the queue itself.)
  *idle = !on_caller && result.responses.empty() && queue_.in_flight() == 0 && executor_.running() == 0;
  return true;
}

Status Engine::observe_tuning(const CycleResult& result) {
  const double now = steady_seconds();
  if (result.ridden) tuner_->observe(result.ridden_response, now);
  for (const Response& r : result.responses) tuner_->observe(r, now);
  if (!tuner_->sample_ended()) return Status::OK();
  std::string decision = topology_.rank == 0 ? tuner_->decide() : std::string();
  Status s = channel_->broadcast(&decision);
  if (!s.ok()) return s;
  return tuner_->adopt(decision);
}

void Engine::apply_tuning() {
  TunedSettings next;
  if (!tuner_ || !tuner_->take_change(&next)) return;
  executor_.set_fusion_threshold(next.fusion_threshold_bytes);
  registry_->tune(CollectiveTuning{next.segment_bytes, next.zero_copy_bytes, next.hierarchical_allreduce});
  if (topology_.rank == 0) KOLO_LOG(kDebug, "KOLO_AUTOTUNE: now " << next.describe());
}

bool Engine::awaits(int64_t handle) {
  // Alone in flight: read without a lock. Else its handle says whether it has ended.
  return queue_.only(handle) || (queue_.in_flight() > 1 && !handles_->poll(handle).has_value());
}

void Engine::drive_waited(int64_t handle, bool until_launched) {
  if (!config_.caller_drives || CycleTurns::in_cycle()) return;  // (a callback inside a cycle waits the usual way)
  // A turn, as after a quiet submit. Where kolo's thread has taken the op up already, the op is left to it:
  // the caller waiting on that cycle and then beside it on the work measured slower than the thread alone.
  turns_.claim();
  if (!queue_.leave_new_to_caller()) {
    turns_.unclaim();
    return;
  }
  drive(handle, until_launched);
}

void Engine::drive(int64_t handle, bool until_launched) {
  if (!config_.caller_drives) return;  // submit() woke the engine thread
  bool left_work = false;
  while (!CycleTurns::in_cycle() && !life_.over() && awaits(handle)) {
    {
      // The engine thread may be in a cycle (an idle one, waiting for a peer's next): that one ends as
      // soon as the peer runs its cycle, and took the op up if it began after the push.
      std::unique_lock<std::mutex> lock(turns_.lock());
      left_work = handed_ != nullptr;
      if (life_.ended() || !awaits(handle) || left_work) break;
      // Device work runs: an earlier op's (this one is new, or was left to this caller), ended here if
      // it has ended unseen, else the engine thread's, which polls it between cycles.
      if (executor_.running() > 0) executor_.poll();
      if (executor_.running() > 0) break;
      bool idle = false;
      bool going = false;
      {
        const CycleTurns::CallerCycle caller(&turns_);
        going = run_cycle(&idle, true);
      }
      left_work = handed_ != nullptr;
      if (!going || left_work) break;
      if (executor_.running() == 0) continue;  // nothing launched: the next cycle, if the op needs one
      if (until_launched) break;                // the engine thread hears of the work's end
    }
    // This cycle launched work on kolo's stream (the op's, or others' agreed before it): the caller
    // ends it rather than hand it to the engine thread and back, then drives on if the op needs more.
    if (!wait_for_launched_work(handle)) break;
  }
  hand_back(left_work);
}

void Engine::hand_back(bool left_work) {
  // What is left (the op, if the loop stopped early; device work to poll; an engine that ended) is kolo's
  // thread's. (Handed responses' entries are still in the queue.)
  using Left = CycleTurns::Left;
  const Left left = life_.ended() || left_work || life_.stop_asked() || executor_.running_any_thread() > 0 ? Left::kWork
                    : queue_.in_flight() > 0                                                      ? Left::kPeersAwaited
                                                                                                  : Left::kNothing;
  if (turns_.end_turn(left)) queue_.wake();
}

void Engine::loop() {
  // With nothing in flight on this rank, the engine sleeps longer and longer between cycles (up
  // to kMaxIdleSeconds): an idle cycle agrees on nothing, and a new op wakes the engine at once,
  // so this costs no latency while sparing the CPU that training needs (an idle cycle every
  // millisecond took 8% of a core on 2 ranks).
  constexpr double kMaxIdleSeconds = 0.05;
  const double cycle_seconds = config_.cycle_time_ms / 1000.0;
  double wait = cycle_seconds;
  while (!life_.ended()) {
    wait_between_cycles(wait);
    // A caller runs cycles for its op (drive) and wakes this thread for what it leaves.
    const CycleTurns::Next next = turns_.next_for_thread();
    if (next == CycleTurns::Next::kCaller) {
      wait = std::max(wait, 1e-3);  // not a spin, whatever KOLO_CYCLE_TIME_MS
      continue;
    }
    if (next == CycleTurns::Next::kLater) {
      wait = cycle_seconds;
      continue;
    }
    hold_while_device_is_full();
    bool idle = false;
    bool launched = false;
    const uint64_t seen = work_signal_->fired();
    {
      std::lock_guard<std::mutex> lock(turns_.lock());
      const size_t before = executor_.running();
      if (life_.ended() || !run_cycle(&idle)) break;
      launched = executor_.running() > before;
    }
    if (launched) spin_on_launched_work(seen);
    if (!idle && queue_.in_flight() == 0) watch_for_next_op();
    wait = idle ? std::min(std::max(wait, 1e-4) * 2, std::max(cycle_seconds, kMaxIdleSeconds)) : cycle_seconds;
  }
  std::lock_guard<std::mutex> cycle(turns_.lock());  // a driving caller has left its cycle
  if (timeline_) timeline_->close();
  timeline_handover_.close();  // a start/stop_timeline waiting for this engine gives up
  life_.thread_ended();
}

}  // namespace kolo
