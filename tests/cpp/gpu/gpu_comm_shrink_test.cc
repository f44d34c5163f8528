// The device seam's shrink (NCCL's ncclCommShrink) on its own: rank 1 stops taking part in a
// communicator (as a frozen process: alive, silent) while the others have an allreduce on it in
// flight; they shrink it out, which stops that allreduce, and reduce exactly over the new one. What
// recover_in_place does with kolo's communicators after a lost peer (tests/system/elastic_in_place runs that through
// the host double, whose shrink is ULFM's).
#include <gtest/gtest.h>
#include <mpi.h>

#include <memory>
#include <string>

#include "gpu/gpu_test_util.h"

namespace kolo {
namespace {

using testing::Buffer;
using testing::DeviceTensor;
using testing::TestStream;

constexpr int kLost = 1;
constexpr int64_t kCount = 4099;

Buffer values(int64_t n, double base) {
  Buffer b(DataType::kFloat64, {n});
  for (size_t i = 0; i < b.size(); ++i) b.set(i, base + static_cast<double>(i % 10));
  return b;
}

// A communicator of every rank, made through the seam as kolo's DeviceContext does.
std::unique_ptr<DeviceComm> world_comm(DeviceBackend& b) {
  static MPI_Comm world = MPI_COMM_WORLD;
  CommMembers m;
  m.size = size();
  m.rank = rank();
  m.mpi_comm = &world;
  if (rank() == 0) {
    EXPECT_TRUE(b.unique_id(&m.id).ok());
  }
  int length = static_cast<int>(m.id.size());
  MPI_Bcast(&length, 1, MPI_INT, 0, MPI_COMM_WORLD);
  m.id.resize(static_cast<size_t>(length));
  MPI_Bcast(&m.id[0], length, MPI_BYTE, 0, MPI_COMM_WORLD);
  std::unique_ptr<DeviceComm> comm;
  const Status s = b.create_comm(testing::test_ordinal(), m, &comm);
  EXPECT_TRUE(s.ok()) << s.message();
  return comm;
}

TEST(GpuCommShrink, TheSurvivorsShrinkASilentMemberOutAndReduceExactly) {
  if (!testing::test_device().real()) {
    GTEST_SKIP() << "the host double shrinks through ULFM only (tests/system/elastic_in_place runs it there)";
  }
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks";
  DeviceBackend& b = *testing::test_device().backend();
  std::unique_ptr<DeviceComm> comm = world_comm(b);
  ASSERT_TRUE(comm);
  {
    // Every member once, as kolo's communicators have been used before a peer is lost: NCCL connects
    // its members at a collective's first call (on the H200 the silent member's never came, and the
    // others' call itself waited out the communicator's 120 s).
    TestStream warm;
    DeviceTensor t(values(kCount, 1.0));
    ASSERT_TRUE(comm->allreduce(t.data(), t.data(), kCount, DataType::kFloat64, ReduceOp::kSum, warm.get()).ok());
    testing::sync_stream(warm.get());
  }
  if (rank() == kLost) {
    // Never calls on the communicator again, until the others are done with it.
    MPI_Barrier(MPI_COMM_WORLD);
    comm->abort();
    return;
  }
  // Waits for kLost for ever: the shrink must stop it (NCCL_SHRINK_ABORT).
  TestStream hung;
  DeviceTensor stuck(values(kCount, 1.0));
  ASSERT_TRUE(comm->allreduce(stuck.data(), stuck.data(), kCount, DataType::kFloat64, ReduceOp::kSum, hung.get()).ok());

  std::unique_ptr<DeviceComm> shrunk;
  const Status s = comm->shrink({kLost}, &shrunk, {});
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(shrunk->size(), size() - 1);
  EXPECT_EQ(shrunk->rank(), rank() - (rank() > kLost ? 1 : 0));
  TestStream stream;
  DeviceTensor t(values(kCount, rank() + 1.0));
  ASSERT_TRUE(shrunk->allreduce(t.data(), t.data(), kCount, DataType::kFloat64, ReduceOp::kSum, stream.get()).ok());
  testing::sync_stream(stream.get());
  EXPECT_TRUE(shrunk->async_error().ok()) << shrunk->async_error().message();
  double ranks_sum = 0;
  for (int r = 0; r < size(); ++r) ranks_sum += r == kLost ? 0 : r + 1;
  Buffer expected(DataType::kFloat64, {kCount});
  for (size_t i = 0; i < expected.size(); ++i) expected.set(i, ranks_sum + (size() - 1) * static_cast<double>(i % 10));
  EXPECT_TRUE(testing::same_bytes(t.download(), expected));
  comm->abort();
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace
}  // namespace kolo
