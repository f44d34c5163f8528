#include <gtest/gtest.h>

#include <cstring>

#include "common/half.h"
#include "cpu/kernels.h"

namespace kolo {
namespace {

TEST(CpuKernels, AverageOfFloatsMultipliesByTheReciprocalInDouble) {
  const Scaling s = post_scaling(DataType::kFloat32, ReduceOp::kAverage, 1.0, 3);
  EXPECT_EQ(s.factor, 1.0 / 3);
  std::vector<float> v = {3.0f, 9.0f, -27.0f, 1.0f};
  scale_into(DataType::kFloat32, v.data(), v.data(), 4, s);
  EXPECT_EQ(v, (std::vector<float>{1.0f, 3.0f, -9.0f, static_cast<float>(1.0 / 3)}));
}

TEST(CpuKernels, PostscaleCombinesWithAverage) {
  const Scaling s = post_scaling(DataType::kFloat64, ReduceOp::kAverage, 8.0, 4);
  EXPECT_EQ(s.factor, 2.0);
  EXPECT_TRUE(post_scaling(DataType::kFloat64, ReduceOp::kSum, 1.0, 4).identity());
}

TEST(CpuKernels, IntegerAverageTruncatesTowardZero) {
  const Scaling s = post_scaling(DataType::kInt32, ReduceOp::kAverage, 1.0, 4);
  EXPECT_EQ(s.divisor, 4);
  std::vector<int32_t> v = {7, -7, 8, 3};
  std::vector<int32_t> out(4);
  scale_into(DataType::kInt32, v.data(), out.data(), 4, s);
  EXPECT_EQ(out, (std::vector<int32_t>{1, -1, 2, 0}));
  std::vector<uint8_t> u = {255, 9};
  scale_into(DataType::kUInt8, u.data(), u.data(), 2, Scaling{1.0, 2});
  EXPECT_EQ(u, (std::vector<uint8_t>{127, 4}));
}

TEST(CpuKernels, IdentityCopiesWhenOutOfPlace) {
  std::vector<int64_t> in = {1, 2, 3}, out(3, 0);
  scale_into(DataType::kInt64, in.data(), out.data(), 3, Scaling{});
  EXPECT_EQ(out, in);
}

TEST(CpuKernels, SixteenBitFloatsScaleAndReduceThroughFloat) {
  std::vector<uint16_t> h = {float_to_fp16(6.0f), float_to_fp16(-1.5f)};
  scale_into(DataType::kFloat16, h.data(), h.data(), 2, Scaling{0.5, 1});
  EXPECT_EQ(fp16_to_float(h[0]), 3.0f);
  EXPECT_EQ(fp16_to_float(h[1]), -0.75f);

  std::vector<uint16_t> a = {float_to_bf16(2.0f), float_to_bf16(-3.0f), float_to_bf16(5.0f)};
  std::vector<uint16_t> b = {float_to_bf16(4.0f), float_to_bf16(1.0f), float_to_bf16(-5.0f)};
  auto reduced = [&](ReduceOp op) {
    std::vector<uint16_t> inout = b;
    reduce_16bit(DataType::kBFloat16, op, a.data(), inout.data(), 3);
    return std::vector<float>{bf16_to_float(inout[0]), bf16_to_float(inout[1]), bf16_to_float(inout[2])};
  };
  EXPECT_EQ(reduced(ReduceOp::kSum), (std::vector<float>{6, -2, 0}));
  EXPECT_EQ(reduced(ReduceOp::kMin), (std::vector<float>{2, -3, -5}));
  EXPECT_EQ(reduced(ReduceOp::kMax), (std::vector<float>{4, 1, 5}));
  EXPECT_EQ(reduced(ReduceOp::kProduct), (std::vector<float>{8, -3, -25}));

  std::vector<uint16_t> x = {float_to_fp16(1000.0f)}, y = {float_to_fp16(0.5f)};
  reduce_16bit(DataType::kFloat16, ReduceOp::kSum, x.data(), y.data(), 1);
  EXPECT_EQ(fp16_to_float(y[0]), 1000.5f);
}

}  // namespace
}  // namespace kolo
