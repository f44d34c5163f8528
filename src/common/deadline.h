// A bound on something that may block for good inside a library kolo cannot interrupt (an MPI call
// waiting on a peer that MPI never declares failed): past `seconds`, `on_expiry` runs on a thread of
// its own, while the blocked thread is still blocked. It must take no lock the blocked thread may hold.
#pragma once

#include <condition_variable>
#include <functional>
#include <mutex>
#include <thread>

namespace kolo {

class Deadline {
 public:
  // seconds <= 0: no bound (nothing runs).
  Deadline(double seconds, std::function<void()> on_expiry);
  // Disarms: `on_expiry` does not run unless it already has started, and then it is waited for.
  ~Deadline();
  Deadline(const Deadline&) = delete;
  Deadline& operator=(const Deadline&) = delete;

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool disarmed_ = false;
  std::thread thread_;
};

}  // namespace kolo
