// Where an engine is in its life, for every thread that asks: its thread running or ended, a stop asked
// for, a cycle that ended it (a failed negotiation, a shutdown), or abandoned on a lost peer (its thread
// maybe stuck in MPI for good). The flags are read without a lock on every op's path; what a waiter
// sleeps on (the thread's end, an abandonment) changes under the lock and wakes it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <mutex>

#include "kolo/status.h"

namespace kolo {

class EngineLife {
 public:
  void started() { running_ = true; }
  // On the engine thread, last: stop() and wait_ended() return.
  void thread_ended();
  // False once the thread has ended, here or because another rank shut down.
  bool running() const { return running_; }

  // Every rank's engine stops at its next cycle (the cycle asks for the shutdown).
  void ask_stop() { stop_asked_ = true; }
  bool stop_asked() const { return stop_asked_; }
  // A cycle ended the engine, its ops failed: its thread stops, and no caller runs a cycle.
  void end() { ended_ = true; }
  bool ended() const { return ended_; }

  // A peer is lost: ops pushed from now on fail with `why` (refusal()), and waits for the thread give up.
  void abandon(const Status& why);
  bool abandoned() const { return abandoned_; }
  // Why a push is refused now: the abandonment's reason, else OK.
  Status refusal() const;

  // Whether a caller may run no more cycles: the engine ended, was abandoned, or is stopping.
  bool over() const { return ended_ || abandoned_ || stop_asked_; }

  // Blocks until the thread has ended or the engine was abandoned.
  void wait_ended_or_abandoned();
  // Whether the thread has ended, waiting up to `seconds`.
  bool wait_ended(double seconds);

 private:
  std::atomic<bool> running_{false};
  std::atomic<bool> stop_asked_{false};
  std::atomic<bool> ended_{false};
  std::atomic<bool> abandoned_{false};
  mutable std::mutex mu_;  // over running_ and abandoned_'s changes (for cv_) and why_
  std::condition_variable cv_;
  Status why_;
};

}  // namespace kolo
