// An application that initialized MPI with too little thread support gets a clear error from init().
#include <gtest/gtest.h>
#include <mpi.h>

#include "kolo/kolo.h"

static int g_provided = -1;

TEST(ApplicationOwnsMpi, FunneledIsRefusedWithAReason) {
  if (g_provided != MPI_THREAD_FUNNELED) GTEST_SKIP() << "this MPI did not provide exactly MPI_THREAD_FUNNELED";
  kolo::Status s = kolo::init();
  EXPECT_EQ(s.code(), kolo::StatusCode::kUnsupported);
  EXPECT_EQ(s.message(),
            "MPI provides only MPI_THREAD_FUNNELED; kolo runs MPI from a background thread and needs "
            "MPI_THREAD_SERIALIZED or better. Initialize MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...) "
            "(mpi4py does by default), or let kolo initialize it.");
  EXPECT_FALSE(kolo::is_initialized());
}

int main(int argc, char** argv) {
  MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &g_provided);
  ::testing::InitGoogleTest(&argc, argv);
  const int rc = RUN_ALL_TESTS();
  MPI_Finalize();
  return rc;
}
