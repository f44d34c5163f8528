// GPU tensors beside a joined rank (it takes part from its GPU) and in process sets (communicators
// of their own), each result exact or against the CPU path in the same run.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpu/gpu_collective_inputs.h"
#include "gpu/gpu_test_util.h"

// In kolo::testing, where the suite's helpers (gpu_collective_inputs.h, gpu_test_util.h) are.
namespace kolo {
namespace testing {
namespace {

TEST(GpuJoin, AJoinedRankTakesPartFromItsGpuWithTheIdentity) {
  if (size() < 2) GTEST_SKIP() << "join needs a second rank";
  // The last rank has no more data; the others allreduce (an Average over every rank, the joined
  // one contributing zeros), allgather and broadcast GPU tensors, the joined rank taking part from its GPU.
  const int last = size() - 1;
  int last_joined = -1;
  if (rank() == last) {
    ASSERT_TRUE(join(&last_joined).ok());
  } else {
    for (ReduceOp op : kOps) {
      const Buffer host = input_for(DataType::kFloat64, {300}, op);
      DeviceTensor t(host);
      AllreduceOptions o;
      o.op = op;
      const std::string name = std::string("joined.") + reduce_op_name(op);
      ASSERT_TRUE(allreduce(name, t.view(), t.view(), o).ok());
      const Buffer got = t.download();
      const int n = size() - 1;  // contributing ranks
      for (size_t i = 0; i < 300; ++i) {
        double acc = op == ReduceOp::kProduct ? 1.0 : op == ReduceOp::kMin ? 1e9 : op == ReduceOp::kMax ? -1e9 : 0.0;
        for (int r = 0; r < n; ++r) {
          const double v = op == ReduceOp::kProduct ? factor_value(i, r) : value(i, r);
          acc = op == ReduceOp::kProduct ? acc * v : op == ReduceOp::kMin ? std::min(acc, v) : op == ReduceOp::kMax ? std::max(acc, v) : acc + v;
        }
        if (op == ReduceOp::kAverage) acc *= 1.0 / size();
        ASSERT_EQ(got.get(i), acc) << name << " element " << i;
      }
    }
    DeviceTensor g(input_for(DataType::kInt32, {2}, ReduceOp::kSum));
    Output out;
    ASSERT_TRUE(allgather("joined.gather", g.view(), &out).ok());
    ASSERT_EQ(out.view.shape, std::vector<int64_t>{2 * last});
    DeviceTensor b(input_for(DataType::kUInt8, {10}, ReduceOp::kSum));
    ASSERT_TRUE(broadcast("joined.bc", b.view(), b.view(), 0).ok());
    const Buffer bc = b.download();
    for (size_t i = 0; i < 10; ++i) ASSERT_EQ(bc.get(i), value(i, 0));
    ASSERT_TRUE(barrier().ok());
    ASSERT_TRUE(join(&last_joined).ok());
  }
  EXPECT_NE(last_joined, last);
  // After the join, every rank takes part again.
  DeviceTensor after(input_for(DataType::kFloat32, {4}, ReduceOp::kSum));
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  ASSERT_TRUE(allreduce("after.join", after.view(), after.view(), sum).ok());
  double expected = 0;
  for (int r = 0; r < size(); ++r) expected += value(0, r);
  EXPECT_EQ(after.download().get(0), expected);
}

// GPU tensors in process sets: each set runs on communicators of its own (NCCL ones on a GPU), the
// even and the odd ranks at once, each op against the CPU path in the same set.
TEST(GpuProcessSets, DisjointSetsMatchTheCpuPathInTheSet) {
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks";
  std::vector<int> even, odd;
  for (int r = 0; r < size(); ++r) (r % 2 ? odd : even).push_back(r);
  int even_id = -1, odd_id = -1;
  ASSERT_TRUE(add_process_set(even, &even_id).ok());
  ASSERT_TRUE(add_process_set(odd, &odd_id).ok());
  const bool is_even = rank() % 2 == 0;
  const std::vector<int>& members = is_even ? even : odd;
  const int id = is_even ? even_id : odd_id;

  const Buffer host = input_for(DataType::kFloat32, {1001}, ReduceOp::kSum);
  DeviceTensor in(host);
  ReduceOptions sum;
  sum.op = ReduceOp::kSum;
  sum.process_set = id;
  ASSERT_TRUE(allreduce("set.ar", in.view(), in.view(), sum).ok());
  Buffer cpu = host;
  ASSERT_TRUE(allreduce("set.cpu.ar", cpu.view(), cpu.view(), sum).ok());
  EXPECT_TRUE(same_bytes(in.download(), cpu));

  BroadcastOptions bo;
  bo.process_set = id;
  Buffer mine = input_for(DataType::kInt32, {7}, ReduceOp::kSum, rank());
  DeviceTensor b(mine);
  ASSERT_TRUE(broadcast("set.bc", b.view(), b.view(), members.back(), bo).ok());  // root: a job rank
  ASSERT_TRUE(broadcast("set.cpu.bc", mine.view(), mine.view(), members.back(), bo).ok());
  EXPECT_TRUE(same_bytes(b.download(), mine));

  SizedOutputOptions so;
  so.process_set = id;
  DeviceTensor rows(DataType::kFloat64, {2, 3});
  rows.upload(input_for(DataType::kFloat64, {2, 3}, ReduceOp::kSum));
  Output gathered;
  ASSERT_TRUE(allgather("set.ag", rows.view(), &gathered, so).ok());
  EXPECT_EQ(gathered.view.shape, (std::vector<int64_t>{2 * static_cast<int64_t>(members.size()), 3}));

  ASSERT_TRUE(barrier().ok());
  {
    const Status removed = remove_process_set(even_id);
    ASSERT_TRUE(removed.ok()) << removed.message();
  }
  {
    const Status removed = remove_process_set(odd_id);
    ASSERT_TRUE(removed.ok()) << removed.message();
  }
}

}  // namespace
}  // namespace testing
}  // namespace kolo
