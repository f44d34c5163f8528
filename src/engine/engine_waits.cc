// The engine's waits on device work (engine.h): between cycles, while kolo's stream is full, and on a
// driving caller's thread for the work its cycle launched. Woken by the work's signal where every running
// group fires one, else polled in naps.
#include <algorithm>
#include <optional>
#include <thread>

#include "common/clock.h"
#include "engine/engine.h"

namespace kolo {

namespace {
// Device work is polled in naps that start short and double, so a waiter hears of a collective that
// took tens of microseconds within about as long, and one that takes milliseconds costs a few wakeups.
constexpr double kFirstNap = 10e-6, kLongestNap = 250e-6;
}  // namespace

std::optional<bool> Engine::try_poll_device_work() {
  std::unique_lock<std::mutex> lock(turns_.lock(), std::try_to_lock);
  if (!lock.owns_lock()) return std::nullopt;  // a caller's cycle polls meanwhile
  const size_t before = executor_.running();
  executor_.poll();
  return executor_.running() < before;
}

double Engine::poll_device_work(double nap) {
  const std::optional<bool> ended = try_poll_device_work();
  if (!ended) return nap;
  return *ended ? kFirstNap : std::min(nap * 2, kLongestNap);
}

double Engine::device_wait(double nap, double until) const {
  const double left = std::max(until - steady_seconds(), 0.0);
  return executor_.signals_every_end() ? left : std::min(nap, left);
}

void Engine::wait_between_cycles(double seconds) {
  // While device work runs, its completions are ended without a negotiation round each time: as its
  // signal wakes the queue (a wake-up without a cycle due), or polled in naps where some work has none.
  const double until = steady_seconds() + seconds;
  double nap = kFirstNap;
  while (steady_seconds() < until) {
    // A driving caller polls the work its cycles launched, and wakes this thread for what it leaves.
    const bool device = executor_.running_any_thread() > 0 && !turns_.claimed();
    if (queue_.wait_for_work(device ? device_wait(nap, until) : until - steady_seconds())) return;
    if (device) nap = poll_device_work(nap);
  }
}

void Engine::spin_on_launched_work(uint64_t seen) {
  // This thread's cycle launched device work: a small op's ends within tens of microseconds, sooner
  // than this thread is woken from a sleep on a busy host. For kSpinSeconds it yields, watching the
  // work's signal (fired since `seen`, read before the cycle) and ending the work when it fires;
  // where some work has no signal, it polls. A new op ends the spin: its cycle is due.
  constexpr double kSpinSeconds = 50e-6;
  const double until = steady_seconds() + kSpinSeconds;
  const size_t in_flight = queue_.in_flight();
  while (steady_seconds() < until && queue_.in_flight() <= in_flight && !life_.stop_asked()) {
    if (executor_.running_any_thread() == 0) return;  // ended meanwhile (a caller's cycle polled it)
    const bool signalled = executor_.signals_every_end();
    if (!signalled || work_signal_->fired() != seen) {
      const std::optional<bool> ended = try_poll_device_work();
      if (ended.value_or(false)) return;
      if (ended && signalled) seen = work_signal_->fired();  // another group's end: watch for the next
    }
    std::this_thread::yield();
  }
}

void Engine::watch_for_next_op() {
  // A caller that waited for its op submits the next within microseconds (a loop of small ops; the
  // first gradient of a burst), sooner than this thread is woken from a sleep on a busy host. It
  // yields meanwhile, so that the caller's thread runs where they share a core.
  constexpr double kWatchSeconds = 50e-6;
  const double until = steady_seconds() + kWatchSeconds;
  while (queue_.in_flight() == 0 && !turns_.claimed() && !life_.stop_asked() && steady_seconds() < until) {
    std::this_thread::yield();
  }
}

void Engine::hold_while_device_is_full() {
  // GPU groups run one after another on kolo's stream. A cycle started while `full` of them are
  // still there could only queue another behind them; waiting until one ends lets what becomes
  // ready meanwhile fuse into one group instead of many small ones, each paying a collective's
  // latency (milliseconds for NCCL over sockets). Cycles are collective, so every rank waits for
  // the slowest and the groups agree. Bounded, so that CPU ops and stall checks wait little.
  const size_t full = static_cast<size_t>(config_.device_groups_in_flight);
  if (full == 0 || executor_.running_any_thread() < full) return;
  constexpr double kMostSeconds = 0.05;
  const double until = steady_seconds() + kMostSeconds;
  double nap = kFirstNap;
  uint64_t seen = work_signal_->fired();
  while (executor_.running_any_thread() >= full && !life_.stop_asked() && steady_seconds() < until) {
    // New ops do not end this wait (they are what it lets gather), so it waits on the signal itself.
    seen = work_signal_->wait_past(seen, device_wait(nap, until));
    nap = poll_device_work(nap);
  }
}

bool Engine::wait_for_launched_work(int64_t handle) {
  // The caller's cycle launched device work (kolo's stream; nothing waits on a peer): the caller,
  // which would otherwise block in wait(), ends the work itself, instead of the engine thread's
  // wake-up and a hand-off back. A small op's work ends within tens of microseconds, sooner than a
  // sleeping thread is woken on a busy host: the caller polls, yielding, for kSpinSeconds, then sleeps
  // until the work's signal (or keeps polling where the work has none). Bounded: work still running
  // after kMostSeconds is the engine thread's, whose waits are the peer watch's.
  constexpr double kSpinSeconds = 50e-6, kMostSeconds = 0.01;
  const double start = steady_seconds(), until = start + kMostSeconds;
  uint64_t seen = work_signal_->fired();
  while (!life_.over() && !handles_->poll(handle).has_value()) {
    bool polled = false;
    {
      std::unique_lock<std::mutex> lock(turns_.lock(), std::try_to_lock);
      if (lock.owns_lock()) {
        if (executor_.running() == 0) return true;  // ended (by the engine thread, or by the last poll)
        executor_.poll();
        polled = true;
      }
    }
    if (handles_->poll(handle).has_value()) break;  // this poll ended it
    const double now = steady_seconds();
    if (now >= until) return false;
    if (polled && now - start >= kSpinSeconds && executor_.signals_every_end()) {
      // A fire after `seen` was read and before this wait ends it at once: no end is missed.
      seen = work_signal_->wait_past(seen, until - now);
    } else {
      std::this_thread::yield();  // the engine thread holds the cycle, or the work has no signal
    }
  }
  return true;
}

}  // namespace kolo
