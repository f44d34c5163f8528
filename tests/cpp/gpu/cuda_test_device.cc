// The GPU suite on CUDA + NCCL. Several ranks may share one GPU when each has its own NCCL_HOSTID
// (tools/gpu/run_gpu_suite.sh sets it).
#include <cuda_runtime.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include "cuda/cuda_backend.h"
#include "gpu/test_device.h"

namespace kolo {
namespace testing {
namespace {

void CUDART_CB sleep_on_stream(void* seconds) {
  std::this_thread::sleep_for(std::chrono::duration<double>(*static_cast<double*>(seconds)));
  delete static_cast<double*>(seconds);
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

class CudaTestDevice : public TestDevice {
 public:
  explicit CudaTestDevice(int ordinal) : ordinal_(ordinal) {}
  std::shared_ptr<DeviceBackend> backend() override { return backend_; }
  bool real() const override { return true; }
  int ordinal() const override { return ordinal_; }
  Status delay(DeviceStream stream, double seconds) override {
    // A host function in stream order: what follows on the stream starts after it has returned.
    const cudaError_t e = cudaLaunchHostFunc(static_cast<cudaStream_t>(stream), sleep_on_stream, new double(seconds));
    if (e != cudaSuccess) return Status::Internal(std::string("cudaLaunchHostFunc: ") + cudaGetErrorString(e));
    return Status::OK();
  }

 private:
  int ordinal_;
  std::shared_ptr<DeviceBackend> backend_ = make_cuda_backend(120.0);
};

}  // namespace

std::unique_ptr<TestDevice> make_test_device(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    *why = std::string("no GPU here (cudaGetDeviceCount: ") + (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") + ")";
    return nullptr;
  }
  const int local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0);
  const int local_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 1);
  if (local_size > count && std::getenv("NCCL_HOSTID") == nullptr) {
    // More ranks than GPUs: NCCL refuses two ranks on one GPU of one host, so each rank claims a
    // host of its own and NCCL connects them through sockets (verified on NCCL 2.28).
    const std::string host = "kolo-test-" + std::to_string(env_int("OMPI_COMM_WORLD_RANK", 0));
    setenv("NCCL_HOSTID", host.c_str(), 1);
    setenv("NCCL_SOCKET_IFNAME", "lo", 0);
  }
  return std::make_unique<CudaTestDevice>(local_rank % count);
}

}  // namespace testing
}  // namespace kolo
