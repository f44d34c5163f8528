// WorkSignal: how device work's end reaches kolo's waiting threads; and the queue's wake for it, which
// ends the engine's wait without a cycle being due.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "engine/tensor_queue.h"
#include "engine/work_signal.h"

namespace kolo {
namespace {

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(WorkSignal, CountsFiresAndCallsItsListenerUntilCleared) {
  WorkSignal signal;
  int heard = 0;
  signal.listen([&] { ++heard; });
  signal.fire();
  signal.fire();
  EXPECT_EQ(signal.fired(), 2u);
  EXPECT_EQ(heard, 2);
  signal.listen({});
  signal.fire();
  EXPECT_EQ(signal.fired(), 3u);
  EXPECT_EQ(heard, 2);
}

TEST(WorkSignal, AFireAlreadyPastWhatWasSeenEndsTheWaitAtOnce) {
  WorkSignal signal;
  signal.fire();
  const auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(signal.wait_past(0, 10.0), 1u);
  EXPECT_LT(seconds_since(start), 1.0);
  EXPECT_EQ(signal.wait_past(1, 0.01), 1u);  // nothing new: the bound ends it
}

TEST(WorkSignal, AFireFromAnotherThreadWakesTheWaiter) {
  WorkSignal signal;
  const auto start = std::chrono::steady_clock::now();
  std::thread backend([&] { signal.fire(); });
  EXPECT_EQ(signal.wait_past(0, 10.0), 1u);
  EXPECT_LT(seconds_since(start), 5.0);
  backend.join();
}

TEST(TensorQueue, DeviceWorkEndingEndsTheWaitWithoutACycleDue) {
  TensorQueue queue;
  std::thread backend([&] { queue.device_done(); });
  const auto start = std::chrono::steady_clock::now();
  EXPECT_FALSE(queue.wait_for_work(10.0));
  EXPECT_LT(seconds_since(start), 5.0);
  backend.join();
  // Taken by that wait: the next one waits its bound.
  EXPECT_FALSE(queue.wait_for_work(0.01));
  queue.wake();
  EXPECT_TRUE(queue.wait_for_work(10.0));
}

}  // namespace
}  // namespace kolo
