// Who runs an engine's next negotiation cycle: kolo's thread, or a caller that waits for its op anyway (a
// blocking call, an async op's waiter, an express allreduce). Cycles are collective and ordered, so which
// thread of a rank runs one does not matter to its peers; running it on the waiting caller's thread spares
// two thread wake-ups, most of a small op's latency. The rules, all here:
// - A caller takes a turn (claim) before its op is pushed quietly, or before it drives an op already
//   pushed; from then kolo's thread runs no cycle (next_for_thread, its check again under the lock:
//   claimed, and TensorQueue::take_new_unless_driven against callers()) until the caller ends its turn.
// - Every cycle runs under lock(), whoever runs it; a caller's inside a CallerCycle. A thread already in a
//   cycle (an op's callback that makes a blocking call) never takes a turn: in_cycle().
// - A caller ends its turn saying what it leaves (end_turn): work (kolo's thread woken at once), only ops
//   waiting on peers (kolo's thread runs a cycle after the cycle time, unless a caller takes a turn by then:
//   a cycle at once would hold the lock in a round the peers join only with their next op), or nothing.
// What a caller's cycle agreed on but does not run on its own thread is handed to kolo's thread, which runs
// it before its next cycle (Engine::Handed).
#pragma once

#include <atomic>
#include <mutex>

namespace kolo {

class CycleTurns {
 public:
  // Whether this thread is inside one of an engine's cycles.
  static bool in_cycle() { return t_in_cycle_; }

  void claim() { ++callers_; }
  // A claim given up before any cycle ran on it.
  void unclaim() { --callers_; }
  enum class Left { kNothing, kPeersAwaited, kWork };
  // Returns whether kolo's thread must be woken.
  bool end_turn(Left left) {
    --callers_;
    if (left == Left::kPeersAwaited) resume_later_ = true;
    return left != Left::kNothing;
  }
  // Whether a caller holds a turn. Any thread, lock-free.
  bool claimed() const { return callers_.load() > 0; }
  const std::atomic<int>& callers() const { return callers_; }

  enum class Next { kCaller, kLater, kThread };
  // For kolo's thread, before it takes the lock for a cycle.
  Next next_for_thread() {
    if (claimed()) return Next::kCaller;
    return resume_later_.exchange(false) ? Next::kLater : Next::kThread;
  }

  // Held for a cycle (and for the controller, the executor and the queue's removals), by whoever runs it.
  std::mutex& lock() { return mu_; }
  // Whether a caller is inside a cycle.
  bool caller_in_cycle() const { return caller_cycle_; }

  // Any thread's cycle, under lock().
  class Cycle {
   public:
    Cycle() { t_in_cycle_ = true; }
    ~Cycle() { t_in_cycle_ = false; }
    Cycle(const Cycle&) = delete;
    Cycle& operator=(const Cycle&) = delete;
  };
  // A caller's cycle, under lock(): seen by caller_in_cycle().
  class CallerCycle {
   public:
    explicit CallerCycle(CycleTurns* turns) : turns_(turns) { turns_->caller_cycle_ = true; }
    ~CallerCycle() { turns_->caller_cycle_ = false; }
    CallerCycle(const CallerCycle&) = delete;
    CallerCycle& operator=(const CallerCycle&) = delete;

   private:
    CycleTurns* turns_;
  };

 private:
  // Describes the calling thread, not the process: an op's callback inside a cycle must not drive, since
  // the lock is its thread's already.
  static inline thread_local bool t_in_cycle_ = false;

  std::mutex mu_;
  std::atomic<int> callers_{0};  // callers holding a turn
  std::atomic<bool> caller_cycle_{false};
  std::atomic<bool> resume_later_{false};
};

}  // namespace kolo
