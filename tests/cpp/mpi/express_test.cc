// A blocking small allreduce runs in the cycle it rides on, with no entry or handle (Engine::express);
// where that cycle does not end it (a peer not there yet, another op in flight), it goes on as any op.
// Each way, and beside the usual path on other ranks, the result is exact, the name is held in flight,
// an unnamed op is counted once, and the callback runs once.
#include <gtest/gtest.h>
#include <mpi.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "mpi_test_util.h"

namespace kolo {
namespace {

using testing::Buffer;

AllreduceOptions sum() {
  AllreduceOptions o;
  o.op = ReduceOp::kSum;
  return o;
}

double rank_sum() { return size() * (size() + 1) / 2.0; }

TEST(Express, APeerThatComesLateLeavesTheOpInFlightAndItEndsExact) {
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks";
  for (int step = 0; step < 6; ++step) {
    // Rank 0's cycle meets the others' idle cycles first on the odd steps: its op is left in flight.
    if (step % 2 == 1 && rank() != 0) std::this_thread::sleep_for(std::chrono::milliseconds(30));
    std::vector<float> in = {static_cast<float>(rank() + 1), 2.0f * (rank() + 1)};
    std::vector<float> out(2, -1.0f);  // not in place
    int calls = 0;
    AllreduceOptions o = sum();
    o.on_done = [&calls](const Status& s) {
      EXPECT_TRUE(s.ok()) << s.message();
      ++calls;
    };
    const Status s = allreduce("express.late", cpu_view(in), cpu_view(out), o);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(calls, 1) << "step " << step;
    EXPECT_EQ(out, (std::vector<float>{static_cast<float>(rank_sum()), static_cast<float>(2 * rank_sum())}));
    EXPECT_EQ(in, (std::vector<float>{static_cast<float>(rank() + 1), 2.0f * (rank() + 1)}));
  }
}

TEST(Express, ItsNameIsInFlightUntilItEnds) {
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks";
  std::vector<float> warm = {1.0f};
  ASSERT_TRUE(allreduce("express.held", cpu_view(warm), cpu_view(warm), sum()).ok());  // cached: it rides next
  std::vector<float> v = {static_cast<float>(rank() + 1)};
  std::atomic<bool> started{false};
  Status second;
  std::thread other;
  if (rank() == 0) {
    // While rank 0's op waits for the others (200 ms late), the same name from another thread is refused.
    other = std::thread([&] {
      while (!started) std::this_thread::yield();
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      std::vector<float> w = {1.0f};
      second = wait(allreduce_async("express.held", cpu_view(w), cpu_view(w), sum()));
    });
  } else {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  started = true;
  const Status s = allreduce("express.held", cpu_view(v), cpu_view(v), sum());
  if (other.joinable()) other.join();
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(v[0], rank_sum());
  if (rank() == 0) {
    EXPECT_EQ(second.code(), StatusCode::kInvalidArgument);
    EXPECT_NE(second.message().find("tensor 'express.held' is already in flight on rank 0"), std::string::npos)
        << second.message();
  }
}

TEST(Express, AnUnnamedOpIsCountedOnceWhicheverWayItGoes) {
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks";
  // Rank 0 does not drive, so its unnamed ops take the usual path; the others' go express, or are left
  // in flight where rank 0's other op holds them up.
  const testing::ScopedSettings drives(rank() == 0 ? Settings{{"KOLO_CALLER_DRIVES", "0"}} : Settings{});
  for (int step = 0; step < 6; ++step) {
    Buffer other(DataType::kFloat32, {1});
    other.set(0, 1.0);
    Handle pending;
    if (rank() == 0) pending = allreduce_async("express.other", other.view(), other.view(), sum());
    std::vector<int32_t> v = {rank() + 1};
    const Status s = allreduce("", cpu_view(v), cpu_view(v), sum());
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(v[0], static_cast<int32_t>(rank_sum()));
    if (rank() != 0) pending = allreduce_async("express.other", other.view(), other.view(), sum());
    ASSERT_TRUE(wait(pending).ok());
    EXPECT_EQ(other.get(0), size());
  }
}

TEST(Express, BadInputIsRefusedNamingTheTensorAndTheRank) {
  std::vector<float> in = {1.0f, 2.0f};
  std::vector<float> out = {0.0f};
  const Status s = allreduce("express.bad", cpu_view(in), cpu_view(out), sum());
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("'express.bad'"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("rank " + std::to_string(rank())), std::string::npos) << s.message();
  // Nothing is left in flight: the name runs next.
  std::vector<float> ok = {1.0f};
  ASSERT_TRUE(allreduce("express.bad", cpu_view(ok), cpu_view(ok), sum()).ok());
  EXPECT_EQ(ok[0], size());
}

}  // namespace
}  // namespace kolo
