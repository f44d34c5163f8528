#include <gtest/gtest.h>

#include "engine/validation.h"

namespace kolo {
namespace {

CallSite site(OpKind kind, const std::string& name = "w", int rank = 1, int size = 4) {
  return CallSite{name, kind, rank, size, nullptr};
}

TensorView floats(float* data, std::vector<int64_t> shape) { return cpu_view(data, std::move(shape)); }

TEST(Validation, GoodCallsPass) {
  float a[12], b[12];
  EXPECT_TRUE(validate_allreduce(site(OpKind::kAllreduce), floats(a, {3, 4}), floats(b, {3, 4}), ReduceOp::kSum, 1, 1).ok());
  EXPECT_TRUE(validate_allreduce(site(OpKind::kAllreduce), floats(a, {12}), floats(a, {12}), ReduceOp::kAverage, 0.5, 2).ok());
  EXPECT_TRUE(validate_allreduce(site(OpKind::kAllreduce), floats(nullptr, {0}), floats(nullptr, {0}), ReduceOp::kSum, 1, 1).ok());
  EXPECT_TRUE(validate_broadcast(site(OpKind::kBroadcast), floats(a, {12}), floats(a, {12}), 3).ok());
  EXPECT_TRUE(validate_allgather(site(OpKind::kAllgather), floats(a, {0, 4})).ok());
}

TEST(Validation, BadTensorsNameTheTensorAndRank) {
  float a[12], b[12];
  auto msg = [](const Status& s) {
    EXPECT_FALSE(s.ok());
    return s.message();
  };
  TensorView bad = floats(a, {12});
  bad.dtype = static_cast<DataType>(42);
  EXPECT_EQ(msg(validate_allreduce(site(OpKind::kAllreduce), bad, bad, ReduceOp::kSum, 1, 1)),
            "allreduce of tensor 'w' on rank 1: input has an unsupported dtype (42); kolo supports uint8, int8, uint16, int16, "
            "int32, int64, float16, bfloat16, float32, float64, bool");
  TensorView strided = floats(a, {3, 2});
  strided.strides = {1, 3};
  EXPECT_EQ(msg(validate_allreduce(site(OpKind::kAllreduce), strided, strided, ReduceOp::kSum, 1, 1)),
            "allreduce of tensor 'w' on rank 1: input is not contiguous (shape [3, 2], strides [1, 3]); make a "
            "contiguous copy first");
  EXPECT_EQ(msg(validate_allreduce(site(OpKind::kAllreduce), floats(nullptr, {5}), floats(b, {5}), ReduceOp::kSum, 1, 1)),
            "allreduce of tensor 'w' on rank 1: input has a null data pointer but 5 elements");
  EXPECT_EQ(msg(validate_allreduce(site(OpKind::kAllreduce), floats(a, {12}), floats(b, {11}), ReduceOp::kSum, 1, 1)),
            "allreduce of tensor 'w' on rank 1: output shape [11] differs from input shape [12]");
  EXPECT_EQ(msg(validate_allreduce(site(OpKind::kAllreduce), floats(a, {6}), floats(a + 2, {6}), ReduceOp::kSum, 1, 1)),
            "allreduce of tensor 'w' on rank 1: output overlaps the input without being the same memory; pass the "
            "same view for in place");
  EXPECT_EQ(msg(validate_allreduce(site(OpKind::kAllreduce), floats(a, {-2}), floats(b, {-2}), ReduceOp::kSum, 1, 1)),
            "allreduce of tensor 'w' on rank 1: input has a negative dimension in shape [-2]");
  int32_t ints[4];
  EXPECT_TRUE(validate_allreduce(site(OpKind::kAllreduce), cpu_view(ints, {4}), cpu_view(ints, {4}), ReduceOp::kSum, 2, 1)
                  .ok());  // integers scale too, as in Horovod
  bool flags[4];
  EXPECT_EQ(msg(validate_allreduce(site(OpKind::kAllreduce), cpu_view(flags, {4}), cpu_view(flags, {4}), ReduceOp::kSum, 2, 1)),
            "allreduce of tensor 'w' on rank 1: prescale and postscale factors do not apply to bool tensors (their "
            "reductions are logical)");
  EXPECT_EQ(msg(validate_allreduce(site(OpKind::kAllreduce), floats(a, {4}), floats(a, {4}), static_cast<ReduceOp>(9), 1, 1)),
            "allreduce of tensor 'w' on rank 1: unknown reduce op 9");
  TensorView gpu = floats(a, {4});
  gpu.device = Device::CUDA(0);
  Status s = validate_allreduce(site(OpKind::kAllreduce), gpu, gpu, ReduceOp::kSum, 1, 1);
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_EQ(s.message(),
            "allreduce of tensor 'w' on rank 1: input is on cuda:0, but this kolo has no GPU support; use CPU tensors");
}

TEST(Validation, OpSpecificChecks) {
  float a[12], b[12];
  EXPECT_EQ(validate_broadcast(site(OpKind::kBroadcast), floats(a, {12}), floats(a, {12}), 4).message(),
            "broadcast of tensor 'w' on rank 1: root rank 4 is outside 0..3");
  EXPECT_EQ(validate_allgather(site(OpKind::kAllgather), floats(a, {})).message(),
            "allgather of tensor 'w' on rank 1: input needs at least one dimension (rows to gather)");

  std::vector<int64_t> splits = {1, 2, 3};
  EXPECT_EQ(validate_alltoall(site(OpKind::kAlltoall), floats(a, {6, 2}), &splits).message(),
            "alltoall of tensor 'w' on rank 1: got 3 split sizes for 4 ranks");
  splits = {1, 2, 3, 1};
  EXPECT_EQ(validate_alltoall(site(OpKind::kAlltoall), floats(a, {6, 2}), &splits).message(),
            "alltoall of tensor 'w' on rank 1: split sizes add up to 7, but the first dimension is 6");
  splits = {};
  EXPECT_EQ(validate_alltoall(site(OpKind::kAlltoall), floats(a, {6, 2}), &splits).message(),
            "alltoall of tensor 'w' on rank 1: without splits the first dimension (6) must divide by the number of "
            "ranks (4)");
  splits = {};
  ASSERT_TRUE(validate_alltoall(site(OpKind::kAlltoall), floats(a, {12}), &splits).ok());
  EXPECT_EQ(splits, (std::vector<int64_t>{3, 3, 3, 3}));

  // 10 rows over 4 ranks: 3, 3, 2, 2. Rank 1 gets 3.
  EXPECT_TRUE(validate_reducescatter(site(OpKind::kReducescatter), floats(a, {10}), floats(b, {3}), ReduceOp::kSum, 1, 1).ok());
  EXPECT_EQ(validate_reducescatter(site(OpKind::kReducescatter), floats(a, {10}), floats(b, {2}), ReduceOp::kSum, 1, 1)
                .message(),
            "reducescatter of tensor 'w' on rank 1: output shape [2] should be [3] (this rank's block of rows)");
}

}  // namespace
}  // namespace kolo
