// main() for the GPU suite under mpirun: picks the test device (the host double, or CUDA + NCCL),
// puts it under kolo in place of the default, and runs the tests with kolo started. Without a GPU
// the CUDA build of the suite exits 77 (ctest: skipped), saying why; it never passes there. With
// KOLO_CONTROLLER=gloo kolo runs in the Gloo world, and MPI is initialized here for the host double alone
// (its communicators run on MPI; NCCL's ids go through kolo's Gloo groups as on a GPU).
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "api/runtime.h"
#include "gpu/gpu_test_util.h"
#include "kolo/kolo.h"
#include "mpi/kolo_test_main.h"

namespace kolo {
namespace testing {
namespace {
TestDevice* g_device = nullptr;
}  // namespace

TestDevice& test_device() { return *g_device; }
int test_ordinal() { return g_device->ordinal(); }

}  // namespace testing
}  // namespace kolo

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  const char* controller = std::getenv("KOLO_CONTROLLER");
  const bool gloo = controller != nullptr && std::strcmp(controller, "gloo") == 0;
  if (gloo) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  }
  struct Finalize {
    bool on;
    ~Finalize() {
      if (on) MPI_Finalize();
    }
  } finalize{gloo};
  std::string why;
  std::unique_ptr<kolo::testing::TestDevice> device = kolo::testing::make_test_device(&why);
  if (!device) {
    std::printf("skipped: %s\n", why.c_str());
    return 77;
  }
  kolo::testing::g_device = device.get();
  kolo::Runtime::instance().use_device_backend(device->backend());
  return kolo::testing::run_tests_under_kolo();
}
