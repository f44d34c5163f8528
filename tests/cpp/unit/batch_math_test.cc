// The batched copy's arithmetic and index math (src/cuda/batch_math.h) on the CPU: the functions
// the CUDA kernel runs, checked against kolo's CPU path for every dtype, odd sizes, empty tensors
// and batches of thousands of tensors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "common/half.h"
#include "cpu/kernels.h"
#include "cuda/batch_math.h"

namespace kolo {
namespace {

using batch::kChunkElements;

std::vector<DataType> all_dtypes() {
  return {DataType::kUInt8,   DataType::kInt8,     DataType::kUInt16,  DataType::kInt16,   DataType::kInt32,
          DataType::kInt64,   DataType::kFloat16,  DataType::kBFloat16, DataType::kFloat32, DataType::kFloat64,
          DataType::kBool};
}

// Random bytes that are valid, finite values of `dtype` (no NaN: its payload is not an equality).
std::vector<char> random_values(DataType dtype, int64_t count, std::mt19937* rng) {
  std::vector<char> bytes(static_cast<size_t>(count) * dtype_size(dtype) + 1);
  std::uniform_real_distribution<double> real(-1000.0, 1000.0);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int64_t i = 0; i < count; ++i) {
    char* p = bytes.data() + i * static_cast<int64_t>(dtype_size(dtype));
    const double v = real(*rng);
    switch (dtype) {
      case DataType::kFloat16: { const uint16_t h = float_to_fp16(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
      case DataType::kBFloat16: { const uint16_t h = float_to_bf16(static_cast<float>(v)); std::memcpy(p, &h, 2); break; }
      case DataType::kFloat32: { const float f = static_cast<float>(v); std::memcpy(p, &f, 4); break; }
      case DataType::kFloat64: std::memcpy(p, &v, 8); break;
      case DataType::kBool: *p = static_cast<char>(byte(*rng) & 1); break;
      default:
        for (size_t k = 0; k < dtype_size(dtype); ++k) p[k] = static_cast<char>(byte(*rng));
    }
  }
  return bytes;
}

TEST(BatchMath, BlocksCoverEachPieceInChunks) {
  EXPECT_EQ(batch::blocks_for(0), 0);
  EXPECT_EQ(batch::blocks_for(1), 1);
  EXPECT_EQ(batch::blocks_for(kChunkElements), 1);
  EXPECT_EQ(batch::blocks_for(kChunkElements + 1), 2);
  int64_t b = 0, e = 0;
  batch::chunk_of(kChunkElements * 2 + 5, 2, &b, &e);
  EXPECT_EQ(b, kChunkElements * 2);
  EXPECT_EQ(e, kChunkElements * 2 + 5);
  batch::chunk_of(kChunkElements * 2 + 5, 1, &b, &e);
  EXPECT_EQ(b, kChunkElements);
  EXPECT_EQ(e, kChunkElements * 2);
}

TEST(BatchMath, EveryBlockFindsItsPieceAndEmptyPiecesNone) {
  // Pieces of 3, 0, 1, 0, 0 and 2 blocks.
  const std::vector<int64_t> first = {0, 3, 3, 4, 4, 4, 6};
  const std::vector<int> expected = {0, 0, 0, 2, 5, 5};
  for (int64_t block = 0; block < 6; ++block) {
    EXPECT_EQ(batch::piece_of_block(first.data(), 6, block), expected[static_cast<size_t>(block)]) << block;
  }
}

TEST(BatchMath, LaunchesTakeAtMostTheirShareOfPiecesAndSkipEmptyOnes) {
  std::vector<CopyPiece> pieces(2500);
  for (size_t i = 0; i < pieces.size(); ++i) pieces[i].count = static_cast<int64_t>(i % 3) * 5000;
  const auto launches = batch::plan_launches(pieces);
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0].first_piece, 0u);
  EXPECT_EQ(launches[0].n, batch::kMaxPiecesPerLaunch);
  EXPECT_EQ(launches[2].first_piece, 2000u);
  EXPECT_EQ(launches[2].n, 500);
  int64_t blocks = 0;
  for (const auto& l : launches) blocks += l.blocks();
  int64_t expected = 0;
  for (const auto& p : pieces) expected += batch::blocks_for(p.count);
  EXPECT_EQ(blocks, expected);
  std::vector<CopyPiece> empty(3);
  EXPECT_TRUE(batch::plan_launches(empty).empty());
}

// Packing thousands of tensors of odd sizes, every dtype, into one buffer and back, with
// scaling on the way out: bit for bit what the CPU path (scale_into) gives.
class BatchCopy : public ::testing::TestWithParam<DataType> {};

TEST_P(BatchCopy, PackAndUnpackWithScalingMatchTheCpuPath) {
  const DataType dtype = GetParam();
  const size_t elem = dtype_size(dtype);
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> size(0, 3 * kChunkElements / 2);
  std::vector<int64_t> counts(1234);
  for (auto& c : counts) c = size(rng) % 7 == 0 ? 0 : size(rng);
  counts[3] = 1;
  counts[5] = kChunkElements;
  counts[6] = kChunkElements + 1;

  std::vector<std::vector<char>> inputs;
  std::vector<CopyPiece> pack;
  int64_t total = 0;
  for (int64_t c : counts) {
    inputs.push_back(random_values(dtype, c, &rng));
    total += c;
  }
  std::vector<char> fused(static_cast<size_t>(total) * elem + 1);
  int64_t at = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    pack.push_back(CopyPiece{inputs[i].data(), fused.data() + at * static_cast<int64_t>(elem), counts[i]});
    at += counts[i];
  }
  // Integers scale too (multiplied in double, truncated); bools never do.
  const bool scaled = dtype != DataType::kBool;
  CopyTransform pre{dtype, dtype, scaled ? 0.375 : 1.0, 1, ReduceOp::kSum};
  ASSERT_TRUE(batch::batched_copy_on_host(pack, pre).ok());

  std::vector<char> expected(fused.size());
  at = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    scale_into(dtype, inputs[i].data(), expected.data() + at * static_cast<int64_t>(elem), counts[i],
               Scaling{pre.scale, 1});
    at += counts[i];
  }
  ASSERT_EQ(std::memcmp(fused.data(), expected.data(), static_cast<size_t>(total) * elem), 0);

  // Unpack with the scaling of an Average over 3 ranks and a postscale of 1.5.
  const Scaling post = post_scaling(dtype, ReduceOp::kAverage, scaled ? 1.5 : 1.0, 3);
  std::vector<std::vector<char>> outputs;
  std::vector<CopyPiece> unpack;
  at = 0;
  for (int64_t c : counts) {
    outputs.emplace_back(static_cast<size_t>(c) * elem + 1);
    unpack.push_back(CopyPiece{fused.data() + at * static_cast<int64_t>(elem), outputs.back().data(), c});
    at += c;
  }
  ASSERT_TRUE(batch::batched_copy_on_host(unpack, CopyTransform{dtype, dtype, post.factor, post.divisor,
                                                                ReduceOp::kSum})
                  .ok());
  at = 0;
  for (size_t i = 0; i < counts.size(); ++i) {
    std::vector<char> want(static_cast<size_t>(counts[i]) * elem + 1);
    scale_into(dtype, fused.data() + at * static_cast<int64_t>(elem), want.data(), counts[i], post);
    ASSERT_EQ(std::memcmp(outputs[i].data(), want.data(), static_cast<size_t>(counts[i]) * elem), 0) << "piece " << i;
    at += counts[i];
  }
}

TEST_P(BatchCopy, ANullSourceFillsTheIdentityOfEachReduceOp) {
  const DataType dtype = GetParam();
  const size_t elem = dtype_size(dtype);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    const int64_t n = kChunkElements + 3;
    std::vector<char> got(static_cast<size_t>(n) * elem, 0x5a), want(static_cast<size_t>(n) * elem);
    ASSERT_TRUE(batch::batched_copy_on_host({CopyPiece{nullptr, got.data(), n}}, CopyTransform{dtype, dtype, 1.0, 1, op}).ok());
    fill_identity(dtype, op, want.data(), n);
    EXPECT_EQ(got, want) << dtype_name(dtype) << " " << reduce_op_name(op);
  }
}

INSTANTIATE_TEST_SUITE_P(EveryDtype, BatchCopy, ::testing::ValuesIn(all_dtypes()),
                         [](const ::testing::TestParamInfo<DataType>& i) { return std::string(dtype_name(i.param)); });

TEST(BatchMath, CompressionCastsFloat32To16BitsAndBackAsTheConversionsDo) {
  std::mt19937 rng(3);
  const int64_t n = 3 * kChunkElements + 17;
  auto bytes = random_values(DataType::kFloat32, n, &rng);
  const float* in = reinterpret_cast<const float*>(bytes.data());
  for (DataType half : {DataType::kFloat16, DataType::kBFloat16}) {
    std::vector<uint16_t> wire(static_cast<size_t>(n));
    ASSERT_TRUE(batch::batched_copy_on_host({CopyPiece{in, wire.data(), n}},
                                            CopyTransform{DataType::kFloat32, half, 0.5, 1, ReduceOp::kSum})
                    .ok());
    std::vector<float> back(static_cast<size_t>(n));
    ASSERT_TRUE(batch::batched_copy_on_host({CopyPiece{wire.data(), back.data(), n}},
                                            CopyTransform{half, DataType::kFloat32, 4.0, 1, ReduceOp::kSum})
                    .ok());
    for (int64_t i = 0; i < n; ++i) {
      const float scaled = static_cast<float>(static_cast<double>(in[i]) * 0.5);
      const uint16_t h = half == DataType::kFloat16 ? float_to_fp16(scaled) : float_to_bf16(scaled);
      ASSERT_EQ(wire[static_cast<size_t>(i)], h) << i;
      const float widened = half == DataType::kFloat16 ? fp16_to_float(h) : bf16_to_float(h);
      ASSERT_EQ(back[static_cast<size_t>(i)], static_cast<float>(static_cast<double>(widened) * 4.0)) << i;
    }
  }
  // The CPU path's cast (compression in MPI allreduce) computes the same.
  for (DataType half : {DataType::kFloat16, DataType::kBFloat16}) {
    std::vector<uint16_t> gpu(static_cast<size_t>(n)), cpu(static_cast<size_t>(n));
    ASSERT_TRUE(batch::batched_copy_on_host({CopyPiece{in, gpu.data(), n}},
                                            CopyTransform{DataType::kFloat32, half, 0.75, 1, ReduceOp::kSum})
                    .ok());
    cast_into(DataType::kFloat32, half, in, cpu.data(), n, Scaling{0.75, 1});
    ASSERT_EQ(gpu, cpu);
    std::vector<float> gpu_back(static_cast<size_t>(n)), cpu_back(static_cast<size_t>(n));
    ASSERT_TRUE(batch::batched_copy_on_host({CopyPiece{gpu.data(), gpu_back.data(), n}},
                                            CopyTransform{half, DataType::kFloat32, 1.0 / 3, 1, ReduceOp::kSum})
                    .ok());
    cast_into(half, DataType::kFloat32, cpu.data(), cpu_back.data(), n, Scaling{1.0 / 3, 1});
    ASSERT_EQ(gpu_back, cpu_back);
  }
  std::vector<int32_t> ints(4);
  Status s = batch::batched_copy_on_host({CopyPiece{ints.data(), ints.data(), 4}},
                                         CopyTransform{DataType::kInt32, DataType::kFloat16, 1.0, 1, ReduceOp::kSum});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "a batched copy cannot turn int32 into float16");
}

TEST(BatchMath, Int16TravelsAsInt32AndBack) {
  std::vector<int16_t> v = {-32768, -1, 0, 7, 32767};
  std::vector<int32_t> wide(v.size());
  std::vector<int16_t> back(v.size());
  const int64_t n = static_cast<int64_t>(v.size());
  ASSERT_TRUE(batch::batched_copy_on_host({CopyPiece{v.data(), wide.data(), n}},
                                          CopyTransform{DataType::kInt16, DataType::kInt32, 1.0, 1, ReduceOp::kSum})
                  .ok());
  EXPECT_EQ(wide, (std::vector<int32_t>{-32768, -1, 0, 7, 32767}));
  wide[4] = 32767 + 3;  // a sum past int16's range wraps back as it would have in int16
  ASSERT_TRUE(batch::batched_copy_on_host({CopyPiece{wide.data(), back.data(), n}},
                                          CopyTransform{DataType::kInt32, DataType::kInt16, 1.0, 1, ReduceOp::kSum})
                  .ok());
  EXPECT_EQ(back, (std::vector<int16_t>{-32768, -1, 0, 7, -32766}));
}

TEST(BatchMath, UInt16TravelsAsInt32AndBack) {
  std::vector<uint16_t> v = {0, 1, 32768, 65535};
  std::vector<int32_t> wide(v.size());
  std::vector<uint16_t> back(v.size());
  const int64_t n = static_cast<int64_t>(v.size());
  ASSERT_TRUE(batch::batched_copy_on_host({CopyPiece{v.data(), wide.data(), n}},
                                          CopyTransform{DataType::kUInt16, DataType::kInt32, 1.0, 1, ReduceOp::kSum})
                  .ok());
  EXPECT_EQ(wide, (std::vector<int32_t>{0, 1, 32768, 65535}));  // no sign: Min and Max stay right in int32
  wide[3] = 65535 + 65535;  // a sum past uint16's range wraps back as it would have in uint16
  ASSERT_TRUE(batch::batched_copy_on_host({CopyPiece{wide.data(), back.data(), n}},
                                          CopyTransform{DataType::kInt32, DataType::kUInt16, 1.0, 1, ReduceOp::kSum})
                  .ok());
  EXPECT_EQ(back, (std::vector<uint16_t>{0, 1, 32768, 65534}));
}

TEST(BatchMath, IntegerAveragesTruncateTowardZeroAsC) {
  std::vector<int32_t> v = {7, -7, 5, -5, 0, 2147483647};
  std::vector<int32_t> out(v.size());
  ASSERT_TRUE(batch::batched_copy_on_host({CopyPiece{v.data(), out.data(), static_cast<int64_t>(v.size())}},
                                          CopyTransform{DataType::kInt32, DataType::kInt32, 1.0, 3, ReduceOp::kSum})
                  .ok());
  EXPECT_EQ(out, (std::vector<int32_t>{2, -2, 1, -1, 0, 715827882}));
}

}  // namespace
}  // namespace kolo
