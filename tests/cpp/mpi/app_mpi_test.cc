// The application initializes MPI itself (as mpi4py does), uses it alongside kolo, and finalizes it.
#include <gtest/gtest.h>
#include <mpi.h>

#include <thread>

#include "kolo/kolo.h"

namespace kolo {
namespace {

TEST(ApplicationOwnsMpi, KoloWorksBesideTheApplicationsOwnMpiCalls) {
  ASSERT_TRUE(init().ok());
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  EXPECT_EQ(size(), world);
  // The application's collectives on MPI_COMM_WORLD run while kolo's do, from another thread.
  std::thread app([] {
    for (int i = 0; i < 20; ++i) {
      int v = 1, sum = 0;
      MPI_Allreduce(&v, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
      EXPECT_EQ(sum, kolo::size());
    }
  });
  for (int i = 0; i < 20; ++i) {
    std::vector<double> x(100, 1.0);
    AllreduceOptions o;
    o.op = ReduceOp::kSum;
    ASSERT_TRUE(allreduce("beside.app", cpu_view(x), cpu_view(x), o).ok());
    EXPECT_EQ(x[99], static_cast<double>(world));
  }
  app.join();
  ASSERT_TRUE(shutdown().ok());
  int finalized = 1;
  MPI_Finalized(&finalized);
  EXPECT_FALSE(finalized) << "kolo must leave MPI_Finalize to the application that initialized MPI";
}

}  // namespace
}  // namespace kolo

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
