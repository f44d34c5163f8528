#include "engine/work_signal.h"

#include <chrono>
#include <utility>

namespace kolo {

void WorkSignal::fire() {
  std::lock_guard<std::mutex> lock(mu_);
  ++fired_;
  // Under the lock, so that listen({}) in a stopping engine waits for a listener still running.
  if (listener_) listener_();
  cv_.notify_all();
}

uint64_t WorkSignal::fired() {
  std::lock_guard<std::mutex> lock(mu_);
  return fired_;
}

uint64_t WorkSignal::wait_past(uint64_t seen, double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return fired_ > seen; });
  return fired_;
}

void WorkSignal::listen(std::function<void()> listener) {
  std::lock_guard<std::mutex> lock(mu_);
  listener_ = std::move(listener);
}

}  // namespace kolo
