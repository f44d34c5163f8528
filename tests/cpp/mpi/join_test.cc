// join(): a rank out of data takes part with zeros while the others go on, on CPU tensors.
#include <mpi.h>

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "mpi_test_util.h"

namespace kolo {
namespace {

using testing::Buffer;

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
