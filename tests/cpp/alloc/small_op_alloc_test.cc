// A blocking small allreduce in steady state (its response cached, the caller driving its cycle, the
// op riding on the negotiation) allocates nothing: no operator new on any thread of the process,
// kolo's included. A small op's latency is a microsecond or so, and its allocations and frees took a
// visible share of it. Run at 1 and 2 ranks; KOLO_TEST_ALLOC_TRACE=1 prints each allocation's call
// stack.
#include <gtest/gtest.h>

#include <vector>

#include "alloc_counter.h"
#include "kolo/kolo.h"
#include "../mpi/kolo_test_main.h"

namespace kolo {
namespace {

constexpr int kWarmOps = 200;  // the first negotiates and caches the name; the rest fill the pools
constexpr int kCountedOps = 2000;

TEST(SteadyState, ABlockingSmallAllreduceAllocatesNothing) {
  if (!(mpi_threads_supported() || controller() == "gloo")) GTEST_SKIP() << "the caller drives only with MPI_THREAD_MULTIPLE";
  std::vector<float> data(1, 1.0f);
  const TensorView view = cpu_view(data);  // the caller's part, made once
  const std::string name = "alloc.steady_state.scalar";  // longer than a short string's buffer
  AllreduceOptions o;
  o.op = ReduceOp::kSum;
  for (int i = 0; i < kWarmOps; ++i) {
    data[0] = 1.0f;
    ASSERT_TRUE(allreduce(name, view, view, o).ok());
  }
  testing::trace_allocations(true);
  const testing::AllocCounts before = testing::alloc_counts();
  bool all_ok = true;
  for (int i = 0; i < kCountedOps; ++i) {
    data[0] = 1.0f;
    all_ok = allreduce(name, view, view, o).ok() && data[0] == static_cast<float>(size()) && all_ok;
  }
  const testing::AllocCounts after = testing::alloc_counts();
  testing::trace_allocations(false);
  EXPECT_TRUE(all_ok);
  EXPECT_EQ(after.news - before.news, 0u) << "operator new calls in " << kCountedOps << " ops";
  // kolo's code allocates with operator new only. malloc is Open MPI's: now and then (a few in
  // thousands of ops at 2 ranks) ob1 buffers a message that arrived before its receive was posted.
  EXPECT_LE(after.mallocs - before.mallocs, static_cast<uint64_t>(kCountedOps / 100))
      << "malloc calls in " << kCountedOps << " ops";
}

}  // namespace
}  // namespace kolo

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  return kolo::testing::run_tests_under_kolo();
}
