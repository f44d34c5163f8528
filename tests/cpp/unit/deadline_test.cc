#include "common/deadline.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

namespace kolo {
namespace {

bool becomes_true(const std::atomic<bool>& flag, double seconds) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (!flag && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  return flag;
}

TEST(Deadline, RunsItsActionOncePastTheBoundWhileTheOwnerIsStillBlocked) {
  std::atomic<bool> expired{false};
  std::atomic<int> runs{0};
  Deadline deadline(0.05, [&] {
    ++runs;
    expired = true;
  });
  EXPECT_TRUE(becomes_true(expired, 10.0));
  EXPECT_EQ(runs.load(), 1);
}

TEST(Deadline, DisarmedInTimeItNeverRuns) {
  std::atomic<bool> expired{false};
  { Deadline deadline(30.0, [&] { expired = true; }); }  // ends at once: the destructor wakes its thread
  EXPECT_FALSE(expired.load());
}

TEST(Deadline, NoBoundAtZero) {
  std::atomic<bool> expired{false};
  {
    Deadline deadline(0.0, [&] { expired = true; });
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(expired.load());
}

}  // namespace
}  // namespace kolo
