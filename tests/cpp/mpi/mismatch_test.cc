// Ranks that disagree about one name: the op fails on every rank, naming the tensor and the ranks,
// and the engine goes on with the next ops.
#include <gtest/gtest.h>

#include "mpi_test_util.h"

namespace kolo {
namespace {

using testing::Buffer;

std::string others() { return size() == 2 ? "rank 1" : "ranks 1-" + std::to_string(size() - 1); }

// After a failure, the engine still runs ops of the same and other names.
void expect_engine_still_works(const std::string& name) {
  Buffer b(DataType::kInt32, {3});
  for (size_t i = 0; i < 3; ++i) b.set(i, 1);
  AllreduceOptions o;
  o.op = ReduceOp::kSum;
  Status s = allreduce(name, b.view(), b.view(), o);
  ASSERT_TRUE(s.ok()) << s.message();
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(b.get(i), size());
}

class Mismatch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (size() < 2) GTEST_SKIP() << "a mismatch needs at least two ranks";
  }
};

TEST_F(Mismatch, Dtype) {
  Buffer b(rank() == 0 ? DataType::kFloat64 : DataType::kFloat32, {4});
  Status s = allreduce("mm.dtype", b.view(), b.view());
  EXPECT_EQ(s.code(), StatusCode::kMismatch);
  EXPECT_EQ(s.message(), "Mismatched dtype for tensor 'mm.dtype' (allreduce): float64 on rank 0, float32 on " + others() + ".");
  expect_engine_still_works("mm.dtype");
}

TEST_F(Mismatch, Shape) {
  Buffer b(DataType::kFloat32, {rank() == 0 ? 5 : 4});
  Status s = allreduce("mm.shape", b.view(), b.view());
  EXPECT_EQ(s.code(), StatusCode::kMismatch);
  EXPECT_EQ(s.message(), "Mismatched shape for tensor 'mm.shape' (allreduce): [5] on rank 0, [4] on " + others() + ".");
  expect_engine_still_works("mm.after.shape");
}

TEST_F(Mismatch, ReduceOpAndScaleFactors) {
  Buffer b(DataType::kFloat32, {4});
  AllreduceOptions o;
  o.op = rank() == 0 ? ReduceOp::kMax : ReduceOp::kSum;
  EXPECT_EQ(allreduce("mm.op", b.view(), b.view(), o).message(),
            "Mismatched reduce op for tensor 'mm.op' (allreduce): Max on rank 0, Sum on " + others() + ".");
  AllreduceOptions p;
  p.prescale_factor = rank() == 0 ? 2.0 : 1.0;
  EXPECT_EQ(allreduce("mm.prescale", b.view(), b.view(), p).message(),
            "Mismatched prescale factor for tensor 'mm.prescale' (allreduce): 2 on rank 0, 1 on " + others() + ".");
  expect_engine_still_works("mm.after.op");
}

TEST_F(Mismatch, RootAndOpKind) {
  Buffer b(DataType::kFloat32, {4});
  EXPECT_EQ(broadcast("mm.root", b.view(), b.view(), rank() == 0 ? 1 : 0).message(),
            "Mismatched root rank for tensor 'mm.root' (broadcast): 1 on rank 0, 0 on " + others() + ".");
  Status s = rank() == 0 ? allreduce("mm.kind", b.view(), b.view()) : broadcast("mm.kind", b.view(), b.view(), 0);
  EXPECT_EQ(s.message(), "Mismatched op kind for tensor 'mm.kind' (allreduce): allreduce on rank 0, broadcast on " +
                             others() + ".");
  expect_engine_still_works("mm.after.kind");
}

TEST_F(Mismatch, AllgatherTrailingDimensions) {
  Buffer b(DataType::kInt64, {2, rank() == 0 ? 3 : 2});
  Output out;
  EXPECT_EQ(allgather("mm.gather", b.view(), &out).message(),
            "Mismatched shape (beyond the first dimension) for tensor 'mm.gather' (allgather): [*, 3] on rank 0, [*, 2] on " +
                others() + ".");
}

// The name ran before, so its response is cached on every rank; one rank then changes the shape.
TEST_F(Mismatch, AfterTheNameWasCached) {
  for (int step = 0; step < 3; ++step) {
    Buffer b(DataType::kFloat32, {8});
    ASSERT_TRUE(allreduce("mm.cached", b.view(), b.view()).ok());
  }
  Buffer c(DataType::kFloat32, {rank() == size() - 1 ? 9 : 8});
  const std::string last = std::to_string(size() - 1);
  const std::string first_ranks = size() == 2 ? "rank 0" : "ranks 0-" + std::to_string(size() - 2);
  EXPECT_EQ(allreduce("mm.cached", c.view(), c.view()).message(),
            "Mismatched shape for tensor 'mm.cached' (allreduce): [8] on " + first_ranks + ", [9] on rank " + last + ".");
  Buffer d(DataType::kFloat32, {8});
  EXPECT_TRUE(allreduce("mm.cached", d.view(), d.view()).ok());
}

TEST(BadCalls, FailAtOnceAndEnqueueNothing) {
  Buffer b(DataType::kFloat32, {4});
  TensorView broken = b.view();
  broken.data = nullptr;
  Handle h = allreduce_async("bad.null", broken, broken);
  std::optional<Status> polled = poll(h);
  ASSERT_TRUE(polled.has_value()) << "a rejected call must be done at once";
  EXPECT_EQ(polled->code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(wait(h).message(), "allreduce of tensor 'bad.null' on rank " + std::to_string(rank()) +
                                   ": input has a null data pointer but 4 elements");
  // Nothing was enqueued: the same name works right after, on every rank.
  AllreduceOptions o;
  o.op = ReduceOp::kSum;
  EXPECT_TRUE(allreduce("bad.null", b.view(), b.view(), o).ok());
}

TEST(BadCalls, NameAlreadyInFlight) {
  if (size() < 2) GTEST_SKIP() << "needs a second rank to hold the first op in flight";
  Buffer b(DataType::kFloat32, {4});
  // Rank 0 submits twice before the others submit at all: the first stays in flight.
  Handle first, second;
  if (rank() == 0) {
    first = allreduce_async("dup", b.view(), b.view());
    second = allreduce_async("dup", b.view(), b.view());
    EXPECT_EQ(wait(second).message(), "tensor 'dup' is already in flight on rank 0: wait for it before submitting the name again");
  }
  ASSERT_TRUE(barrier().ok());
  if (rank() != 0) first = allreduce_async("dup", b.view(), b.view());
  EXPECT_TRUE(wait(first).ok());
}

}  // namespace
}  // namespace kolo
