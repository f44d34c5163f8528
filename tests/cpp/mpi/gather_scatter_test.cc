// Allgather, broadcast, alltoall, reducescatter and barrier on CPU tensors: every dtype, exact
// results, at whatever number of ranks mpirun started (allreduce: allreduce_test.cc).
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "collective_values.h"
#include "mpi_test_util.h"

namespace kolo {
namespace {

using testing::Buffer;
using testing::expected_reduction;
using testing::ScopedSettings;
using testing::value;

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
