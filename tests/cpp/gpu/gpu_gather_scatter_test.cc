// Allgather, broadcast, alltoall and reducescatter on GPU tensors: each result is compared with the
// same op on CPU tensors (kolo's MPI path) in the same run (allreduce: gpu_allreduce_test.cc).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu/gpu_collective_inputs.h"
#include "gpu/gpu_test_util.h"

// In kolo::testing, where the suite's helpers (gpu_collective_inputs.h, gpu_test_util.h) are.
namespace kolo {
namespace testing {
namespace {

class GpuAllgather : public ::testing::TestWithParam<DataType> {};

TEST_P(GpuAllgather, RowsDifferPerRankAndMatchTheCpuPath) {
  const DataType dtype = GetParam();
  for (bool uneven : {false, true}) {
    const int64_t rows = uneven ? rank() + 1 : 2;
    const Buffer host = input_for(dtype, {rows, 3}, ReduceOp::kSum);
    DeviceTensor in(dtype, {rows, 3});
    in.upload(host);
    const std::string name = std::string("ag.") + dtype_name(dtype) + (uneven ? ".uneven" : ".even");
    Output gpu, cpu;
    Status s = allgather(name, in.view(), &gpu);
    ASSERT_TRUE(s.ok()) << s.message();
    Buffer mine = host;
    ASSERT_TRUE(allgather("cpu." + name, mine.view(), &cpu).ok());
    ASSERT_EQ(gpu.view.shape, cpu.view.shape);
    EXPECT_EQ(gpu.view.device, Device::CUDA(testing::test_ordinal()));
    Buffer got(dtype, gpu.view.shape);
    ASSERT_TRUE(testing::test_device().backend()->copy(got.data(), gpu.view.data, gpu.view.size_bytes(), nullptr).ok());
    testing::sync_stream(nullptr);
    EXPECT_EQ(testing::values_of(cpu), [&] {
      std::vector<double> v;
      for (size_t i = 0; i < got.size(); ++i) v.push_back(got.get(i));
      return v;
    }()) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GpuAllgather, ::testing::ValuesIn(testing::all_dtypes()), testing::dtype_param_name);

TEST(GpuAllgather, IntoTheCallersMemoryAndHierarchical) {
  for (const char* hierarchical : {"0", "1"}) {
    ScopedSettings settings(Settings{{"KOLO_HIERARCHICAL_ALLGATHER", hierarchical}});
    const int64_t rows = rank() % 2 + 1;
    DeviceTensor in(input_for(DataType::kFloat64, {rows * 2}, ReduceOp::kSum));
    int64_t total = 0;
    for (int r = 0; r < size(); ++r) total += (r % 2 + 1) * 2;
    DeviceTensor mine(DataType::kFloat64, {total});
    SizedOutputOptions o;
    o.allocate = [&](const std::vector<int64_t>& shape, TensorView* out) {
      EXPECT_EQ(shape, std::vector<int64_t>{total});
      *out = mine.view();
      return Status::OK();
    };
    TensorView v = in.view();
    v.shape = {rows * 2};
    Output out;
    ASSERT_TRUE(allgather(std::string("ag.own.") + hierarchical, v, &out, o).ok());
    EXPECT_EQ(out.view.data, mine.data());
    EXPECT_EQ(out.storage, nullptr);
    const Buffer got = mine.download();
    size_t at = 0;
    for (int r = 0; r < size(); ++r) {
      for (size_t i = 0; i < static_cast<size_t>((r % 2 + 1) * 2); ++i, ++at) {
        ASSERT_EQ(got.get(at), value(i, r)) << "rank " << r << " element " << i;
      }
    }
  }
}

TEST(GpuBroadcast, FromEveryRootInPlaceAndOut) {
  for (int root = 0; root < size(); ++root) {
    for (bool in_place : {true, false}) {
      const Buffer host = input_for(DataType::kBFloat16, {1000}, ReduceOp::kSum, root);
      DeviceTensor in(host), out(DataType::kBFloat16, {1000});
      const std::string name = "bc." + std::to_string(root) + (in_place ? ".in" : ".out");
      ASSERT_TRUE(broadcast(name, in.view(), in_place ? in.view() : out.view(), root).ok());
      Buffer cpu = host;
      ASSERT_TRUE(broadcast("cpu." + name, cpu.view(), cpu.view(), root).ok());
      EXPECT_TRUE(same_bytes((in_place ? in : out).download(), cpu)) << name;
    }
  }
}

TEST(GpuAlltoall, UnevenSplits) {
  const int n = size();
  // Rank r sends (r + q) % 3 rows of 2 to rank q.
  std::vector<int64_t> splits;
  int64_t rows = 0;
  for (int q = 0; q < n; ++q) {
    splits.push_back((rank() + q) % 3);
    rows += splits.back();
  }
  const Buffer host = input_for(DataType::kInt64, {rows, 2}, ReduceOp::kSum);
  DeviceTensor in(DataType::kInt64, {rows, 2});
  in.upload(host);
  Output gpu, cpu;
  Status s = alltoall("a2a", in.view(), splits, &gpu);
  ASSERT_TRUE(s.ok()) << s.message();
  Buffer mine = host;
  ASSERT_TRUE(alltoall("cpu.a2a", mine.view(), splits, &cpu).ok());
  EXPECT_EQ(gpu.received_splits, cpu.received_splits);
  ASSERT_EQ(gpu.view.shape, cpu.view.shape);
  Buffer got(DataType::kInt64, gpu.view.shape);
  ASSERT_TRUE(testing::test_device().backend()->copy(got.data(), gpu.view.data, gpu.view.size_bytes(), nullptr).ok());
  testing::sync_stream(nullptr);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got.get(i), testing::values_of(cpu)[i]) << i;
}

TEST(GpuReducescatter, OddRowsEveryOpWithScaling) {
  for (ReduceOp op : kOps) {
    for (int64_t rows : {int64_t{size()} * 3, int64_t{size()} * 3 + 1}) {
      const std::string name = std::string("rs.") + reduce_op_name(op) + "." + std::to_string(rows);
      const Buffer host = input_for(DataType::kFloat32, {rows, 5}, op);
      DeviceTensor in(DataType::kFloat32, {rows, 5});
      in.upload(host);
      const int64_t mine = reducescatter_rows(rows, rank(), size());
      DeviceTensor out(DataType::kFloat32, {mine, 5});
      ReducescatterOptions o;
      o.op = op;
      o.prescale_factor = op == ReduceOp::kSum ? 0.5 : 1.0;
      o.postscale_factor = 2.0;
      TensorView iv = in.view(), ov = out.view();
      iv.shape = {rows, 5};
      ov.shape = {mine, 5};
      Status s = reducescatter(name, iv, ov, o);
      ASSERT_TRUE(s.ok()) << s.message();
      Buffer cpu_in = host;
      Buffer cpu_out(DataType::kFloat32, {mine, 5});
      TensorView ci = cpu_in.view();
      ci.shape = {rows, 5};
      ASSERT_TRUE(reducescatter("cpu." + name, ci, cpu_out.view(), o).ok());
      const Buffer got = out.download();
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got.get(i), cpu_out.get(i)) << name << " element " << i;
    }
  }
}

}  // namespace
}  // namespace testing
}  // namespace kolo
