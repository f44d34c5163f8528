// Holds kolo's thread inside one of its cycles for a while: an async op, never waited for until the
// end, whose callback (run by kolo's thread, in the cycle that ends the op) sleeps. Meanwhile an op
// submitted by the test stays new in the queue, so a wait() for it finds it untaken, whatever the
// timing of kolo's thread otherwise. Collective: every rank makes one at the same point.
#pragma once

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "mpi_test_util.h"

namespace kolo {
namespace testing {

class HeldKolosThread {
 public:
  HeldKolosThread(const std::string& name, double hold_seconds) : buffer_(DataType::kFloat32, {1}) {
    buffer_.set(0, 1.0);
    AllreduceOptions o;
    o.op = ReduceOp::kSum;
    o.on_done = [this, hold_seconds](const Status&) {
      holder_ = std::this_thread::get_id();
      held_ = true;
      std::this_thread::sleep_for(std::chrono::duration<double>(hold_seconds));
    };
    handle_ = allreduce_async(name, buffer_.view(), buffer_.view(), o);
    while (!held_) std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
  ~HeldKolosThread() { EXPECT_TRUE(wait(handle_).ok()); }
  HeldKolosThread(const HeldKolosThread&) = delete;
  HeldKolosThread& operator=(const HeldKolosThread&) = delete;

  // kolo's thread (the one that ran the callback).
  std::thread::id kolos_thread() const { return holder_; }

 private:
  Buffer buffer_;
  Handle handle_;
  std::atomic<bool> held_{false};
  std::thread::id holder_;
};

}  // namespace testing
}  // namespace kolo
