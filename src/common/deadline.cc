#include "deadline.h"

#include <chrono>
#include <utility>

namespace kolo {

Deadline::Deadline(double seconds, std::function<void()> on_expiry) {
  if (seconds <= 0) return;
  thread_ = std::thread([this, seconds, on_expiry = std::move(on_expiry)] {
    {
      std::unique_lock<std::mutex> lock(mu_);
      if (cv_.wait_for(lock, std::chrono::duration<double>(seconds), [this] { return disarmed_; })) return;
    }
    on_expiry();
  });
}

Deadline::~Deadline() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    disarmed_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace kolo
