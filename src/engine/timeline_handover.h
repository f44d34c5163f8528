// A timeline handed from any thread (start_timeline, stop_timeline) to the engine thread, which alone
// writes the engine's timeline and switches at its next cycle. The asker returns once the switch is done
// (the old file closed), or at once where the engine thread will switch no more (closed).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

#include "engine/timeline.h"

namespace kolo {

class TimelineHandover {
 public:
  // Hands `timeline` (null: none from now on) over; the ticket for wait_taken(), once the engine thread
  // is woken.
  uint64_t ask(std::unique_ptr<Timeline> timeline, bool mark_cycles);
  // Until the engine thread has taken what `ticket` handed over, or a later one, or closed.
  void wait_taken(uint64_t ticket);
  // On the engine thread, before a cycle: `take(std::unique_ptr<Timeline>, bool mark_cycles)` for the
  // last timeline handed over, if any, before its asker returns. Lock-free where none was: the usual case.
  template <typename Take>
  void take_if_handed(Take take) {
    if (done_ == asked_) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (done_ == asked_) return;
    take(std::move(next_), next_mark_cycles_);
    done_ = asked_.load();
    cv_.notify_all();
  }
  // The engine thread takes nothing more (it ended, or was abandoned): askers waiting give up, and
  // later ones return at once.
  void close();

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::unique_ptr<Timeline> next_;
  bool next_mark_cycles_ = false;
  bool closed_ = false;
  // Atomic so that the engine thread sees no handover without taking mu_ (written under it).
  std::atomic<uint64_t> asked_{0}, done_{0};
};

}  // namespace kolo
