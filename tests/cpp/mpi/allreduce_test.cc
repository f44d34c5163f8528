// Allreduce on CPU tensors: every op, every dtype, exact results, through every path the engine
// takes (ring, hierarchical, fused, compressed), at whatever number of ranks mpirun started.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "collective_values.h"
#include "mpi_test_util.h"

namespace kolo {
namespace {

using testing::Buffer;
using testing::expected_reduction;
using testing::factor_value;
using testing::ScopedSettings;
using testing::value;

Buffer input_for(DataType dtype, size_t n, ReduceOp op) {
  Buffer b(dtype, {static_cast<int64_t>(n)});
  for (size_t i = 0; i < n; ++i) b.set(i, op == ReduceOp::kProduct ? factor_value(i, rank()) : value(i, rank()));
  return b;
}

class AllreduceTest : public ::testing::TestWithParam<DataType> {};

TEST_P(AllreduceTest, EveryOpEverySizeInPlaceAndOut) {
  const DataType dtype = GetParam();
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    for (size_t n : {size_t{0}, size_t{1}, size_t{17}, size_t{1000}}) {
      for (bool in_place : {true, false}) {
        Buffer in = input_for(dtype, n, op);
        Buffer out(dtype, {static_cast<int64_t>(n)});
        AllreduceOptions o;
        o.op = op;
        const std::string name = std::string("ar.") + reduce_op_name(op) + "." + std::to_string(n) + (in_place ? ".in" : ".out");
        Status s = allreduce(name, in.view(), in_place ? in.view() : out.view(), o);
        ASSERT_TRUE(s.ok()) << s.message();
        const Buffer& result = in_place ? in : out;
        for (size_t i = 0; i < n; ++i) {
          ASSERT_EQ(result.get(i), expected_reduction(op, i, size(), result)) << name << " element " << i;
        }
        if (!in_place) {
          for (size_t i = 0; i < n; ++i) ASSERT_EQ(in.get(i), input_for(dtype, n, op).get(i)) << "input changed";
        }
      }
    }
  }
}

// Above 64 KiB a segment on one host goes by kolo's ring (comm/host/ring_allreduce.h): block counts
// that do not divide by the ranks, several segments, in place and out.
TEST_P(AllreduceTest, EveryOpAboveSixtyFourKibByTheRing) {
  ScopedSettings s(Settings{{"KOLO_SEGMENT_BYTES", "70000"}, {"KOLO_ZERO_COPY_BYTES", "0"}});
  const DataType dtype = GetParam();
  const size_t n = (206001 + dtype_size(dtype) - 1) / dtype_size(dtype);  // 3 segments, each above 64 KiB
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    for (bool in_place : {true, false}) {
      Buffer in = input_for(dtype, n, op);
      Buffer out(dtype, {static_cast<int64_t>(n)});
      AllreduceOptions o;
      o.op = op;
      const std::string name = std::string("ring.") + reduce_op_name(op) + (in_place ? ".in" : ".out");
      Status st = allreduce(name, in.view(), in_place ? in.view() : out.view(), o);
      ASSERT_TRUE(st.ok()) << st.message();
      const Buffer& result = in_place ? in : out;
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(result.get(i), expected_reduction(op, i, size(), result)) << name << " element " << i;
      }
    }
  }
}

TEST_P(AllreduceTest, ScaleFactors) {
  const DataType dtype = GetParam();
  Buffer b = input_for(dtype, 33, ReduceOp::kSum);
  AllreduceOptions o;
  o.op = ReduceOp::kSum;
  o.prescale_factor = 0.5;
  o.postscale_factor = 4.0;
  ASSERT_TRUE(allreduce("ar.scaled", b.view(), b.view(), o).ok());
  for (size_t i = 0; i < 33; ++i) {
    if (dtype_is_floating(dtype)) {
      EXPECT_EQ(b.get(i), 2.0 * expected_reduction(ReduceOp::kSum, i, size(), b));
      continue;
    }
    // Integers, as Horovod scales them: each rank's value times 0.5, truncated, summed, times 4.
    double sum = 0;
    for (int r = 0; r < size(); ++r) sum += std::trunc(value(i, r) * 0.5);
    EXPECT_EQ(b.get(i), sum * 4.0) << "element " << i;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AllreduceTest, ::testing::ValuesIn(testing::all_dtypes()), testing::dtype_param_name);

// Bools reduce logically: Sum, Average and Max are "or", Min and Product "and"; every other op
// moves them as they are.
TEST(Bool, ReductionsAreLogicalAndOtherOpsMoveThem) {
  const size_t n = 40;
  auto flag = [](size_t i, int r) { return (i % 4 == 0) || (i % 4 == 1 && r == 0) || (i % 4 == 2 && r != 0); };
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
    Buffer b(DataType::kBool, {static_cast<int64_t>(n)});
    for (size_t i = 0; i < n; ++i) b.set(i, flag(i, rank()));
    AllreduceOptions o;
    o.op = op;
    ASSERT_TRUE(allreduce(std::string("bool.") + reduce_op_name(op), b.view(), b.view(), o).ok());
    const bool all = op == ReduceOp::kMin || op == ReduceOp::kProduct;
    for (size_t i = 0; i < n; ++i) {
      bool expected = all;
      for (int r = 0; r < size(); ++r) expected = all ? (expected && flag(i, r)) : (expected || flag(i, r));
      ASSERT_EQ(b.get(i), expected ? 1.0 : 0.0) << reduce_op_name(op) << " element " << i;
    }
  }
  Buffer root(DataType::kBool, {n});
  for (size_t i = 0; i < n; ++i) root.set(i, flag(i, rank()));
  ASSERT_TRUE(broadcast("bool.bcast", root.view(), root.view(), 0).ok());
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(root.get(i), flag(i, 0) ? 1.0 : 0.0);
  Output out;
  ASSERT_TRUE(allgather("bool.gather", root.view(), &out).ok());
  EXPECT_EQ(out.view.dtype, DataType::kBool);
  EXPECT_EQ(out.view.shape, std::vector<int64_t>{static_cast<int64_t>(n) * size()});
}

TEST(Allreduce, CompressionSendsFloat32In16BitsFusedAndAlone) {
  // Small multiples of 1/2 are exact in 16 bits, so the compressed results equal the uncompressed
  // ones; 1 + 2^-12 is not (float16 keeps 10 bits, bfloat16 7), so it shows the data travelled in 16 bits.
  for (Compression c : {Compression::kFloat16, Compression::kBFloat16}) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
      std::vector<Buffer> plain, packed;
      std::vector<Handle> handles;
      const std::string tag = std::string(compression_name(c)) + "." + reduce_op_name(op);
      for (size_t n : {size_t{1}, size_t{17}, size_t{3000}}) {
        plain.push_back(input_for(DataType::kFloat32, n, op));
        packed.push_back(input_for(DataType::kFloat32, n, op));
      }
      AllreduceOptions o;
      o.op = op;
      o.prescale_factor = 0.5;
      o.postscale_factor = 3.0;
      for (size_t t = 0; t < plain.size(); ++t) {
        ASSERT_TRUE(allreduce("plain." + tag + std::to_string(t), plain[t].view(), plain[t].view(), o).ok());
      }
      o.compression = c;
      for (size_t t = 0; t < packed.size(); ++t) {
        handles.push_back(allreduce_async("packed." + tag + std::to_string(t), packed[t].view(), packed[t].view(), o));
      }
      for (size_t t = 0; t < packed.size(); ++t) {
        Status s = wait(handles[t]);
        ASSERT_TRUE(s.ok()) << s.message();
        for (size_t i = 0; i < packed[t].size(); ++i) ASSERT_EQ(packed[t].get(i), plain[t].get(i)) << tag << " " << i;
      }
      Buffer fine(DataType::kFloat32, {1});
      fine.set(0, 1.0 + 1.0 / 4096);
      AllreduceOptions sum;
      sum.op = ReduceOp::kSum;
      sum.compression = c;
      ASSERT_TRUE(allreduce("fine." + tag, fine.view(), fine.view(), sum).ok());
      EXPECT_EQ(fine.get(0), static_cast<double>(size())) << tag;
    }
  }
  // Other dtypes travel as they are.
  Buffer ints = input_for(DataType::kInt32, 5, ReduceOp::kSum);
  AllreduceOptions o;
  o.op = ReduceOp::kSum;
  o.compression = Compression::kFloat16;
  ASSERT_TRUE(allreduce("compressed.ints", ints.view(), ints.view(), o).ok());
  for (size_t i = 0; i < 5; ++i) EXPECT_EQ(ints.get(i), expected_reduction(ReduceOp::kSum, i, size(), ints));
}

// Hundreds of tensors in flight at once, several dtypes interleaved, across engine settings that
// change how they are fused, cut and cached.
void many_in_flight(int rounds) {
  const std::vector<DataType> dtypes = {DataType::kFloat32, DataType::kFloat64, DataType::kInt32, DataType::kBFloat16};
  for (int round = 0; round < rounds; ++round) {
    std::vector<Buffer> buffers;
    std::vector<Handle> handles;
    buffers.reserve(300);
    for (int t = 0; t < 300; ++t) {
      const size_t n = static_cast<size_t>((t * 37) % 3000);
      buffers.push_back(input_for(dtypes[t % dtypes.size()], n, ReduceOp::kSum));
      AllreduceOptions o;
      o.op = ReduceOp::kSum;
      handles.push_back(allreduce_async("many." + std::to_string(t), buffers.back().view(), buffers.back().view(), o));
    }
    for (int t = 0; t < 300; ++t) {
      Status s = wait(handles[t]);
      ASSERT_TRUE(s.ok()) << s.message();
      const Buffer& b = buffers[t];
      for (size_t i = 0; i < b.size(); ++i) {
        ASSERT_EQ(b.get(i), expected_reduction(ReduceOp::kSum, i, size(), b)) << "tensor " << t << " element " << i;
      }
    }
  }
}

TEST(Allreduce, ManyInFlightDefaultSettings) { many_in_flight(3); }

TEST(Allreduce, ManyInFlightFusionOff) {
  ScopedSettings s(Settings{{"KOLO_FUSION_THRESHOLD_BYTES", "0"}});
  many_in_flight(2);
}

TEST(Allreduce, ManyInFlightCacheOff) {
  ScopedSettings s(Settings{{"KOLO_CACHE_CAPACITY", "0"}});
  many_in_flight(2);
}

TEST(Allreduce, ManyInFlightTinyCacheEvictsAndRenegotiates) {
  ScopedSettings s(Settings{{"KOLO_CACHE_CAPACITY", "7"}});
  many_in_flight(3);
}

TEST(Allreduce, ManyInFlightSmallSegmentsEverythingPacked) {
  ScopedSettings s(Settings{{"KOLO_SEGMENT_BYTES", "100"}, {"KOLO_ZERO_COPY_BYTES", "0"}, {"KOLO_CYCLE_TIME_MS", "0"}});
  many_in_flight(2);
}

TEST(Allreduce, ManyInFlightSmallFusionBufferAndZeroCopy) {
  ScopedSettings s(Settings{{"KOLO_FUSION_THRESHOLD_BYTES", "4096"}, {"KOLO_ZERO_COPY_BYTES", "64"}, {"KOLO_SEGMENT_BYTES", "1000"}});
  many_in_flight(2);
}

// On one host the hierarchical path still runs its composition: reduce-scatter among all local
// ranks (blocks of uneven size, some empty when there are fewer elements than ranks), a one-rank
// cross-host step, allgather. The emulated cluster runs it across hosts (tests/system/cluster). Calls of at
// most 64 KiB go flat even so; 69633 elements (17 segments of 4096 bytes and one of a single element,
// in every dtype) take the hierarchical path, its last segment with empty blocks.
TEST(Allreduce, HierarchicalEveryDtypeAndOddSizes) {
  ScopedSettings s(Settings{{"KOLO_HIERARCHICAL_ALLREDUCE", "1"}, {"KOLO_SEGMENT_BYTES", "4096"}});
  for (DataType dtype : testing::all_dtypes()) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMax}) {
      for (size_t n : {size_t{1}, size_t{3}, size_t{1001}, size_t{5000}, size_t{69633}}) {
        Buffer in = input_for(dtype, n, op);
        Buffer out(dtype, {static_cast<int64_t>(n)});
        AllreduceOptions o;
        o.op = op;
        const std::string name = std::string("har.") + dtype_name(dtype) + reduce_op_name(op) + std::to_string(n);
        ASSERT_TRUE(allreduce(name, in.view(), out.view(), o).ok());
        for (size_t i = 0; i < n; ++i) ASSERT_EQ(out.get(i), expected_reduction(op, i, size(), out)) << name << " " << i;
      }
    }
  }
  many_in_flight(2);
}

// Across 2 hosts a block crosses in pieces of at most 256 KiB (hierarchical_reducer.h): 4 MiB segments of
// 1,500,007 elements (6 MB in float32, 12 MB in float64) give blocks of several pieces and a ragged
// last one, elements split between pieces where an element is 8 bytes and the piece boundary not.
// Packed and reduced where they lie. On one host the same composition runs without the crossing.
TEST(Allreduce, HierarchicalBlocksCrossInPieces) {
  for (const char* zero_copy : {"0", "1"}) {
    ScopedSettings s(Settings{{"KOLO_HIERARCHICAL_ALLREDUCE", "1"},
                              {"KOLO_SEGMENT_BYTES", "4194304"},
                              {"KOLO_ZERO_COPY_BYTES", zero_copy}});
    for (DataType dtype : {DataType::kFloat32, DataType::kFloat64, DataType::kInt8}) {
      const size_t n = 1500007;
      Buffer in = input_for(dtype, n, ReduceOp::kSum);
      Buffer out(dtype, {static_cast<int64_t>(n)});
      const std::string name = std::string("pieces.") + zero_copy + dtype_name(dtype);
      AllreduceOptions o;
      o.op = ReduceOp::kSum;
      ASSERT_TRUE(allreduce(name, in.view(), out.view(), o).ok()) << name;
      for (size_t i = 0; i < n; ++i) {
        ASSERT_EQ(out.get(i), expected_reduction(ReduceOp::kSum, i, size(), out)) << name << " " << i;
      }
    }
  }
}

TEST(Allreduce, TensorLargerThanTheFusionBufferAndSegments) {
  ScopedSettings s(Settings{{"KOLO_FUSION_THRESHOLD_BYTES", "1024"}, {"KOLO_SEGMENT_BYTES", "4096"}});
  Buffer small = input_for(DataType::kFloat32, 10, ReduceOp::kAverage);
  Buffer big = input_for(DataType::kFloat32, 100003, ReduceOp::kAverage);
  Handle h1 = allreduce_async("big", big.view(), big.view());
  Handle h2 = allreduce_async("small", small.view(), small.view());
  ASSERT_TRUE(wait(h1).ok());
  ASSERT_TRUE(wait(h2).ok());
  for (size_t i = 0; i < big.size(); ++i) ASSERT_EQ(big.get(i), expected_reduction(ReduceOp::kAverage, i, size(), big));
  for (size_t i = 0; i < small.size(); ++i) ASSERT_EQ(small.get(i), expected_reduction(ReduceOp::kAverage, i, size(), small));
}
}  // namespace
}  // namespace kolo
