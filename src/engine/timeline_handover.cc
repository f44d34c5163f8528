#include "engine/timeline_handover.h"

namespace kolo {

uint64_t TimelineHandover::ask(std::unique_ptr<Timeline> timeline, bool mark_cycles) {
  std::lock_guard<std::mutex> lock(mu_);
  if (closed_) return 0;  // (dropped: nobody will take it)
  next_ = std::move(timeline);
  next_mark_cycles_ = mark_cycles;
  return ++asked_;
}

void TimelineHandover::wait_taken(uint64_t ticket) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return done_ >= ticket || closed_; });
}

void TimelineHandover::close() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    closed_ = true;
  }
  cv_.notify_all();
}

}  // namespace kolo
