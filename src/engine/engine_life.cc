#include "engine/engine_life.h"

#include <chrono>

namespace kolo {

void EngineLife::thread_ended() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    running_ = false;
  }
  cv_.notify_all();
}

void EngineLife::abandon(const Status& why) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    why_ = why;
    abandoned_ = true;
  }
  cv_.notify_all();
}

Status EngineLife::refusal() const {
  if (!abandoned_) return Status::OK();
  std::lock_guard<std::mutex> lock(mu_);
  return why_;
}

void EngineLife::wait_ended_or_abandoned() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !running_ || abandoned_; });
}

bool EngineLife::wait_ended(double seconds) {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return !running_; });
}

}  // namespace kolo
