// Every collective, every dtype, exact results, at whatever number of ranks mpirun started.
#include <mpi.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "mpi_test_util.h"

namespace kolo {
namespace {

using testing::Buffer;
using testing::ScopedSettings;

// Small integers: exact in every dtype, and their sums over 4 ranks fit int8.
double value(size_t i, int r) { return static_cast<double>((i * 7 + static_cast<size_t>(r) * 3) % 6); }
// 1 or 2: products over 4 ranks stay at most 16.
double factor_value(size_t i, int r) { return 1.0 + static_cast<double>((i + static_cast<size_t>(r)) % 2); }

double expected_reduction(ReduceOp op, size_t i, int size, const Buffer& like) {
  double acc = op == ReduceOp::kProduct ? 1.0 : op == ReduceOp::kMin ? 1e9 : op == ReduceOp::kMax ? -1e9 : 0.0;
  for (int r = 0; r < size; ++r) {
    const double v = op == ReduceOp::kProduct ? factor_value(i, r) : value(i, r);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAverage: acc += v; break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
      case ReduceOp::kProduct: acc *= v; break;
      case ReduceOp::kAdasum: break;  // tested against its own reference (adasum_test.cc)
    }
  }
  if (op != ReduceOp::kAverage) return acc;
  // Floating point: sum times 1/size in double, rounded to the dtype. Integers: truncating division.
  if (dtype_is_floating(like.dtype())) return like.rounded(acc * (1.0 / size));
  return std::trunc(acc / size);
}

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

// Above 64 KiB a segment on one host goes by kolo's ring (comm/mpi/ring_allreduce.h): block counts
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
// cross-host step, allgather. The emulated cluster runs it across hosts (tests/cluster). Calls of at
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

class AllgatherTest : public ::testing::TestWithParam<DataType> {};

// Rank r contributes r + 1 rows of 3 (rank 1 none, to cover empty contributions): row k of rank r
// holds 10 * r + k + column.
TEST_P(AllgatherTest, RowsDifferPerRank) {
  const DataType dtype = GetParam();
  auto rows_of = [](int r) { return r == 1 ? 0 : r + 1; };
  const int me = rank();
  Buffer in(dtype, {rows_of(me), 3});
  for (int k = 0; k < rows_of(me); ++k) {
    for (int c = 0; c < 3; ++c) in.set(static_cast<size_t>(k * 3 + c), (10 * me + k + c) % 100);
  }
  std::vector<double> expected;
  for (int r = 0; r < size(); ++r) {
    for (int k = 0; k < rows_of(r); ++k) {
      for (int c = 0; c < 3; ++c) expected.push_back(in.rounded((10 * r + k + c) % 100));
    }
  }
  Output out;
  Status s = allgather("gather", in.view(), &out);
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(out.view.shape, (std::vector<int64_t>{static_cast<int64_t>(expected.size() / 3), 3}));
  EXPECT_NE(out.storage, nullptr);
  EXPECT_EQ(testing::values_of(out), expected);

  // The same through the caller's allocator.
  std::vector<char> mine;
  SizedOutputOptions o;
  o.allocate = [&](const std::vector<int64_t>& shape, TensorView* view) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    mine.resize(static_cast<size_t>(n) * dtype_size(dtype) + 1);
    view->data = mine.data();
    return Status::OK();
  };
  Output out2;
  ASSERT_TRUE(allgather("gather", in.view(), &out2, o).ok());
  EXPECT_EQ(out2.view.data, mine.data());
  EXPECT_EQ(out2.storage, nullptr);
  EXPECT_EQ(testing::values_of(out2), expected);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, AllgatherTest, ::testing::ValuesIn(testing::all_dtypes()), testing::dtype_param_name);

TEST(Allgather, HierarchicalGivesTheFlatResult) {
  ScopedSettings s(Settings{{"KOLO_HIERARCHICAL_ALLGATHER", "1"}});
  for (DataType dtype : {DataType::kFloat32, DataType::kInt8, DataType::kBFloat16}) {
    const int me = rank();
    Buffer in(dtype, {me % 3, 2});
    for (size_t i = 0; i < in.size(); ++i) in.set(i, (me * 10 + static_cast<int>(i)) % 100);
    std::vector<double> expected;
    for (int r = 0; r < size(); ++r) {
      for (int i = 0; i < (r % 3) * 2; ++i) expected.push_back((r * 10 + i) % 100);
    }
    Output out;
    ASSERT_TRUE(allgather(std::string("hag.") + dtype_name(dtype), in.view(), &out).ok());
    EXPECT_EQ(testing::values_of(out), expected);
  }
}

TEST(Allgather, FailingAllocatorFailsTheOpNamingTheTensor) {
  Buffer in(DataType::kInt32, {2});
  SizedOutputOptions o;
  o.allocate = [](const std::vector<int64_t>&, TensorView*) { return Status::Internal("pool exhausted"); };
  Output out;
  Status s = allgather("alloc.fails", in.view(), &out, o);
  EXPECT_EQ(s.code(), StatusCode::kInternal);
  EXPECT_EQ(s.message(), "allocating the output of tensor 'alloc.fails': pool exhausted");
}

// The ranks agreed to run the allgather before rank 0's allocator failed: rank 0 must still take
// part, or the ranks' collectives fall out of step and the next op hangs.
TEST(Allgather, AllocatorFailingOnOneRankFailsThereOnlyAndKoloGoesOn) {
  Buffer in(DataType::kInt32, {2});
  for (size_t i = 0; i < in.size(); ++i) in.set(i, rank() * 2 + static_cast<int>(i));
  std::vector<int32_t> memory(2 * size());
  SizedOutputOptions o;
  o.allocate = [&memory](const std::vector<int64_t>&, TensorView* out) {
    if (rank() == 0) return Status::Internal("pool exhausted");
    out->data = memory.data();
    return Status::OK();
  };
  Output out;
  Status s = allgather("alloc.fails.on.0", in.view(), &out, o);
  if (rank() == 0) {
    EXPECT_EQ(s.message(), "allocating the output of tensor 'alloc.fails.on.0': pool exhausted");
  } else {
    ASSERT_TRUE(s.ok()) << s.message();
    for (int i = 0; i < 2 * size(); ++i) EXPECT_EQ(memory[i], i);
  }
  Buffer next(DataType::kFloat32, {3});
  for (size_t i = 0; i < next.size(); ++i) next.set(i, 1);
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  ASSERT_TRUE(allreduce("after.alloc.fails", next.view(), next.view(), sum).ok());
  for (size_t i = 0; i < next.size(); ++i) EXPECT_EQ(next.get(i), size());
}

TEST(Broadcast, FromEveryRootInPlaceAndOut) {
  for (int root = 0; root < size(); ++root) {
    for (DataType dtype : testing::all_dtypes()) {
      Buffer b(dtype, {5, 7});
      Buffer out(dtype, {5, 7});
      for (size_t i = 0; i < b.size(); ++i) b.set(i, rank() == root ? (i * 3 + 1) % 50 : 99);
      const std::string suffix = "." + std::to_string(root) + "." + dtype_name(dtype);
      ASSERT_TRUE(broadcast("bcast.in" + suffix, b.view(), b.view(), root).ok());
      for (size_t i = 0; i < b.size(); ++i) ASSERT_EQ(b.get(i), (i * 3 + 1) % 50);
      Buffer src(dtype, {5, 7});
      for (size_t i = 0; i < src.size(); ++i) src.set(i, rank() == root ? (i + 2) % 40 : 77);
      ASSERT_TRUE(broadcast("bcast.out" + suffix, src.view(), out.view(), root).ok());
      for (size_t i = 0; i < out.size(); ++i) ASSERT_EQ(out.get(i), (i + 2) % 40);
      for (size_t i = 0; i < src.size(); ++i) ASSERT_EQ(src.get(i), rank() == root ? (i + 2) % 40 : 77);
    }
  }
}

TEST(Broadcast, LargerThanASegmentAndEmpty) {
  ScopedSettings s(Settings{{"KOLO_SEGMENT_BYTES", "1000"}});
  Buffer b(DataType::kFloat64, {12345});
  for (size_t i = 0; i < b.size(); ++i) b.set(i, rank() == size() - 1 ? static_cast<double>(i) : -1.0);
  ASSERT_TRUE(broadcast("bcast.big", b.view(), b.view(), size() - 1).ok());
  for (size_t i = 0; i < b.size(); ++i) ASSERT_EQ(b.get(i), static_cast<double>(i));
  Buffer empty(DataType::kFloat64, {0});
  ASSERT_TRUE(broadcast("bcast.empty", empty.view(), empty.view(), 0).ok());
}

// Rank r sends (r + q) % 3 rows of 2 to rank q; each row holds 100 * r + 10 * q + k, then + 1.
TEST(Alltoall, UnevenSplits) {
  for (DataType dtype : {DataType::kFloat32, DataType::kInt64, DataType::kFloat16, DataType::kUInt8}) {
    const int me = rank();
    std::vector<int64_t> splits;
    std::vector<double> rows;
    for (int q = 0; q < size(); ++q) {
      splits.push_back((me + q) % 3);
      for (int k = 0; k < (me + q) % 3; ++k) {
        rows.push_back((100 * me + 10 * q + k) % 250);
        rows.push_back((100 * me + 10 * q + k + 1) % 250);
      }
    }
    Buffer in(dtype, {static_cast<int64_t>(rows.size() / 2), 2});
    for (size_t i = 0; i < rows.size(); ++i) in.set(i, rows[i]);
    std::vector<double> expected;
    std::vector<int64_t> expected_splits;
    for (int r = 0; r < size(); ++r) {
      expected_splits.push_back((r + me) % 3);
      for (int k = 0; k < (r + me) % 3; ++k) {
        expected.push_back(in.rounded((100 * r + 10 * me + k) % 250));
        expected.push_back(in.rounded((100 * r + 10 * me + k + 1) % 250));
      }
    }
    Output out;
    Status s = alltoall(std::string("a2a.") + dtype_name(dtype), in.view(), splits, &out);
    ASSERT_TRUE(s.ok()) << s.message();
    EXPECT_EQ(out.received_splits, expected_splits);
    EXPECT_EQ(testing::values_of(out), expected);
  }
}

TEST(Alltoall, EvenSplitByDefault) {
  Buffer in(DataType::kInt32, {2 * size()});
  for (size_t i = 0; i < in.size(); ++i) in.set(i, 1000 * rank() + static_cast<double>(i));
  Output out;
  ASSERT_TRUE(alltoall("a2a.even", in.view(), {}, &out).ok());
  std::vector<double> expected;
  for (int r = 0; r < size(); ++r) {
    expected.push_back(1000 * r + 2 * rank());
    expected.push_back(1000 * r + 2 * rank() + 1);
  }
  EXPECT_EQ(testing::values_of(out), expected);
  EXPECT_EQ(out.received_splits, std::vector<int64_t>(static_cast<size_t>(size()), 2));
}

TEST(Reducescatter, OddRowsSumAndAverage) {
  for (DataType dtype : testing::all_dtypes()) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMax}) {
      const int64_t rows = 7, cols = 3;
      Buffer in(dtype, {rows, cols});
      for (size_t i = 0; i < in.size(); ++i) in.set(i, value(i, rank()));
      int64_t first = 0;
      for (int r = 0; r < rank(); ++r) first += reducescatter_rows(rows, r, size());
      const int64_t mine = reducescatter_rows(rows, rank(), size());
      Buffer out(dtype, {mine, cols});
      ReducescatterOptions o;
      o.op = op;
      Status s = reducescatter(std::string("rs.") + dtype_name(dtype) + reduce_op_name(op), in.view(), out.view(), o);
      ASSERT_TRUE(s.ok()) << s.message();
      for (size_t i = 0; i < out.size(); ++i) {
        ASSERT_EQ(out.get(i), expected_reduction(op, static_cast<size_t>(first * cols) + i, size(), out))
            << dtype_name(dtype) << " " << reduce_op_name(op) << " element " << i;
      }
    }
  }
}

TEST(Barrier, CompletesOnEveryRank) {
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(barrier().ok());
}

}  // namespace
}  // namespace kolo

namespace kolo {
namespace {

// The last rank has no more data and joins at once; the others go on, then join too.
TEST(Join, OtherRanksGoOnWithoutTheJoinedRank) {
  if (size() < 2) GTEST_SKIP() << "join needs a second rank";
  const int last = size() - 1;
  int last_joined = -1;
  if (rank() == last) {
    ASSERT_TRUE(join(&last_joined).ok());
  } else {
    for (int step = 0; step < 3; ++step) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
        Buffer b(DataType::kFloat64, {5});
        for (size_t i = 0; i < 5; ++i) b.set(i, op == ReduceOp::kProduct ? 2.0 : rank() + static_cast<double>(i));
        AllreduceOptions o;
        o.op = op;
        Status s = allreduce(std::string("joined.") + reduce_op_name(op), b.view(), b.view(), o);
        ASSERT_TRUE(s.ok()) << s.message();
        const int n = size() - 1;  // contributing ranks
        for (size_t i = 0; i < 5; ++i) {
          const double sum = n * static_cast<double>(i) + n * (n - 1) / 2.0;
          // An Average divides by every rank (the joined one contributed zeros), as in Horovod.
          const double expected = op == ReduceOp::kSum       ? sum
                                  : op == ReduceOp::kAverage ? sum * (1.0 / size())
                                  : op == ReduceOp::kMin     ? static_cast<double>(i)
                                  : op == ReduceOp::kMax     ? (n - 1) + static_cast<double>(i)
                                                             : std::pow(2.0, n);
          ASSERT_EQ(b.get(i), expected) << reduce_op_name(op) << " element " << i;
        }
      }
    }
    Buffer g(DataType::kInt32, {1});
    g.set(0, rank());
    Output out;
    ASSERT_TRUE(allgather("joined.gather", g.view(), &out).ok());
    std::vector<double> expected;
    for (int r = 0; r < last; ++r) expected.push_back(r);
    EXPECT_EQ(testing::values_of(out), expected);
    ASSERT_TRUE(barrier().ok());
    ASSERT_TRUE(join(&last_joined).ok());
  }
  // Every rank learns the same last rank to join; with two ranks it is rank 0.
  std::vector<int64_t> mine = {last_joined};
  Output all;
  ASSERT_TRUE(allgather("joined.last", cpu_view(mine), &all).ok());
  for (double v : testing::values_of(all)) EXPECT_EQ(v, static_cast<double>(last_joined));
  EXPECT_NE(last_joined, last);
  if (size() == 2) {
    EXPECT_EQ(last_joined, 0);
  }
  // After the join, every rank takes part again.
  Buffer after(DataType::kFloat32, {2});
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  for (size_t i = 0; i < 2; ++i) after.set(i, 1);
  ASSERT_TRUE(allreduce("after.join", after.view(), after.view(), sum).ok());
  EXPECT_EQ(after.get(0), size());
}

TEST(Join, AverageOverTheContributorsWhenAskedTo) {
  if (size() < 2) GTEST_SKIP() << "join needs a second rank";
  testing::ScopedSettings settings(Settings{{"KOLO_JOIN_AVERAGE", "contributors"}});
  if (rank() == 0) {
    ASSERT_TRUE(join().ok());
    return;
  }
  Buffer b(DataType::kFloat64, {3});
  for (size_t i = 0; i < 3; ++i) b.set(i, rank());
  ASSERT_TRUE(allreduce("joined.contributors", b.view(), b.view()).ok());
  const int n = size() - 1;
  EXPECT_EQ(b.get(0), (n * (n + 1) / 2.0) * (1.0 / n));
  ASSERT_TRUE(join().ok());
}

TEST(Join, NothingElseMayBeSubmittedWhileJoining) {
  if (size() < 2) GTEST_SKIP() << "join needs a second rank";
  // The other ranks join only after rank 0 has tried its op (the MPI barrier), so that rank 0's
  // join cannot have completed already however slow rank 0 is (under ThreadSanitizer it was).
  if (rank() == 0) {
    Handle j = join_async();
    Buffer b(DataType::kFloat32, {2});
    Status s = allreduce("during.join", b.view(), b.view());
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), "allreduce of tensor 'during.join' on rank 0: this rank is in join(); submit ops again once "
                           "every rank has joined");
    MPI_Barrier(MPI_COMM_WORLD);
    ASSERT_TRUE(wait(j).ok());
  } else {
    MPI_Barrier(MPI_COMM_WORLD);
    ASSERT_TRUE(join().ok());
  }
}

}  // namespace
}  // namespace kolo
