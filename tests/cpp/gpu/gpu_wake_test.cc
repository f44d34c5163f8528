// Device work's end wakes the thread waiting for it (a host callback behind its done event), instead
// of that thread polling in naps. Only the host double counts its event queries and callbacks; on
// CUDA the results are still checked.
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "gpu/gpu_test_util.h"

namespace kolo {
namespace {

using testing::Buffer;
using testing::DeviceTensor;
using testing::ScopedSettings;
using testing::TestStream;

constexpr int64_t kCount = 1031;

Buffer filled(double v) {
  Buffer b(DataType::kFloat32, {kCount});
  for (size_t i = 0; i < b.size(); ++i) b.set(i, v + static_cast<double>(i % 10));
  return b;
}

void expect_exact_sum(const DeviceTensor& t, const std::string& name) {
  const Buffer got = t.download();
  const double ranks_sum = size() * (size() + 1) / 2.0;
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got.get(i), ranks_sum + size() * static_cast<double>(i % 10)) << name << " element " << i;
  }
}

// Each op's host callback runs on kolo's stream after its done event. Where kolo's thread found that event
// done first (an op not held up), the callback may still be to come when the op's wait returns: before
// counting, wait for it (the double only; a GPU does not count them).
void await_callbacks(const testing::TestDevice& device, int64_t at_least) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (device.host_callbacks_run() >= 0 && device.host_callbacks_run() < at_least &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

// An op through kolo's thread whose work is held up 0.2 s on the device (its producer's stream is
// delayed). With naps of 10 to 250 us, kolo's thread would ask the device about it about a thousand
// times meanwhile; woken, it asks exactly twice: once as the cycle that launched it ends (still held),
// once when the work's host callback woke it. A cycle of 5 s keeps the cycles' own polls out of it.
TEST(GpuWake, AnAsyncOpsEndWakesKolosThreadInsteadOfItsPolling) {
  ScopedSettings slow_cycles(Settings{{"KOLO_CALLER_DRIVES", "0"}, {"KOLO_CYCLE_TIME_MS", "5000"}});
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  TestStream producer;
  testing::TestDevice& device = testing::test_device();
  {
    DeviceTensor first(filled(rank() + 1.0));  // the first op makes the communicator
    const int64_t callbacks = device.host_callbacks_run();
    ASSERT_TRUE(wait(allreduce_async("wake.first", first.view(), first.view(), sum)).ok());
    expect_exact_sum(first, "wake.first");
    await_callbacks(device, callbacks + 1);  // a CI run under TSan counted it in the next op's (2, not 1)
  }
  for (int round = 0; round < 3; ++round) {
    const std::string name = "wake." + std::to_string(round);
    DeviceTensor t(filled(rank() + 1.0));
    ASSERT_TRUE(device.delay(producer.get(), 0.2).ok());
    const int64_t queries = device.event_queries(), callbacks = device.host_callbacks_run();
    ASSERT_TRUE(wait(allreduce_async(name, t.view(producer.get()), t.view(producer.get()), sum)).ok()) << name;
    if (queries >= 0) {
      EXPECT_EQ(device.event_queries() - queries, 2) << name;
      EXPECT_EQ(device.host_callbacks_run() - callbacks, 1) << name;
    }
    expect_exact_sum(t, name);
  }
  if (device.event_queries() < 0) GTEST_SKIP() << "results exact; only the host double counts its polls";
}

}  // namespace
}  // namespace kolo
