// main() for the tests run under mpirun (kolo_test_main.h).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>

#include "kolo_test_main.h"

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // TEST_MPI_THREAD_LEVEL=serialized: the application initializes MPI with MPI_THREAD_SERIALIZED, as one
  // may, so that the paths kolo takes without MPI_THREAD_MULTIPLE run (only some tests apply).
  // KOLO_CONTROLLER=gloo: kolo runs in the Gloo world (no MPI of its own); the few tests that use MPI as a
  // side channel (barriers between ranks outside kolo) find it initialized here.
  const char* controller = std::getenv("KOLO_CONTROLLER");
  if (controller != nullptr && std::strcmp(controller, "gloo") == 0) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    const int rc = kolo::testing::run_tests_under_kolo();
    MPI_Finalize();
    return rc;
  }
  const char* level = std::getenv("TEST_MPI_THREAD_LEVEL");
  if (level == nullptr || std::strcmp(level, "serialized") != 0) return kolo::testing::run_tests_under_kolo();
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_SERIALIZED, &provided);
  const int rc = kolo::testing::run_tests_under_kolo();
  MPI_Finalize();
  return rc;
}
