// A blocking call's GPU op on the caller's thread (Engine::drive): once kolo's thread has bound the GPU
// and made the communicator, the caller negotiates, launches the op's device work and polls for its
// end itself, instead of two hand-offs between threads and the engine's naps. Only the host double
// tells which thread launched; on CUDA the results are still checked.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "gpu/gpu_test_util.h"
#include "mpi/held_kolos_thread.h"

namespace kolo {
namespace {

using testing::Buffer;
using testing::DeviceTensor;
using testing::ScopedSettings;

Buffer filled(int64_t n, double v) {
  Buffer b(DataType::kFloat64, {n});
  for (size_t i = 0; i < b.size(); ++i) b.set(i, v + static_cast<double>(i % 10));
  return b;
}

// Allreduces a tensor of rank + base with `reduce` and checks every element of the sum.
void expect_exact_sum(const std::string& name, double base, const std::function<Status(const TensorView&)>& reduce) {
  constexpr int64_t kCount = 4099;
  DeviceTensor t(filled(kCount, rank() + base));
  ASSERT_TRUE(reduce(t.view()).ok()) << name;
  const Buffer got = t.download();
  const double ranks_sum = size() * (size() - 1) / 2.0 + size() * base;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got.get(i), ranks_sum + size() * static_cast<double>(i % 10)) << name << " element " << i;
  }
}

std::optional<std::thread::id> launcher() { return testing::test_device().last_launch_thread(); }

TEST(GpuCallerDrives, ABlockingCallLaunchesItsWorkOnTheCallersThread) {
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  auto blocking = [&](const std::string& name) {
    return [name, &sum](const TensorView& v) { return allreduce(name, v, v, sum); };
  };
  // The first GPU op of a fresh kolo binds kolo's thread to the GPU and makes the communicator there.
  ScopedSettings fresh(Settings{});
  expect_exact_sum("caller.first", 0.5, blocking("caller.first"));
  if (launcher()) {
    EXPECT_NE(*launcher(), std::this_thread::get_id()) << "the communicator is made on kolo's thread";
  }
  for (int round = 0; round < 3; ++round) {
    const std::string name = "caller." + std::to_string(round);
    expect_exact_sum(name, round, blocking(name));
    if (!(mpi_threads_supported() || controller() == "gloo")) continue;  // KOLO_CALLER_DRIVES needs MPI_THREAD_MULTIPLE
    if (launcher()) {
      EXPECT_EQ(*launcher(), std::this_thread::get_id()) << name;
    }
  }
  // An op that has ended before its wait is kolo's thread's.
  expect_exact_sum("caller.polled", 7.0, [&](const TensorView& v) {
    const Handle h = allreduce_async("caller.polled", v, v, sum);
    while (!poll(h).has_value()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return wait(h);
  });
  if (launcher()) {
    EXPECT_NE(*launcher(), std::this_thread::get_id());
  }
  if (!launcher()) GTEST_SKIP() << "results exact; only the host double tells which thread launched";
}

TEST(GpuCallerDrives, AnAsyncOpsWaitLaunchesItsWorkOnTheWaitingThread) {
  if (!(mpi_threads_supported() || controller() == "gloo")) GTEST_SKIP() << "needs MPI_THREAD_MULTIPLE";
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  // The first GPU op of a fresh kolo makes the communicator on kolo's thread.
  expect_exact_sum("waiter.first", 0.5, [&](const TensorView& v) { return allreduce("waiter.first", v, v, sum); });
  // While kolo's thread is held in a cycle, the op stays new: its wait() (or wait_on_stream(), which
  // returns once the work is launched) finds it untaken, and the cycle that launches it is the waiter's.
  for (const bool on_stream : {false, true}) {
    for (int round = 0; round < 2; ++round) {
      const std::string name = std::string(on_stream ? "waiter.stream." : "waiter.") + std::to_string(round);
      expect_exact_sum(name, round, [&](const TensorView& v) {
        testing::HeldKolosThread held("held." + name, 0.1);
        const Handle h = allreduce_async(name, v, v, sum);
        if (!on_stream) return wait(h);
        const Status s = wait_on_stream(h, v.stream);
        // The caller's stream waits for the work; the host waits for that stream before it reads.
        if (s.ok()) testing::sync_stream(v.stream);
        return s;
      });
      if (launcher()) {
        EXPECT_EQ(*launcher(), std::this_thread::get_id()) << name;
      }
    }
  }
  if (!launcher()) GTEST_SKIP() << "results exact; only the host double tells which thread launched";
}

TEST(GpuCallerDrives, OffEveryOpIsKolosThreads) {
  ScopedSettings off(Settings{{"KOLO_CALLER_DRIVES", "0"}});
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  for (int round = 0; round < 2; ++round) {
    const std::string name = "kolos." + std::to_string(round);
    expect_exact_sum(name, round, [&](const TensorView& v) { return allreduce(name, v, v, sum); });
    if (launcher()) {
      EXPECT_NE(*launcher(), std::this_thread::get_id()) << name;
    }
  }
  if (!launcher()) GTEST_SKIP() << "results exact; only the host double tells which thread launched";
}

}  // namespace
}  // namespace kolo
