// device_in_place on CUDA + NCCL (see in_place_device.h). Built only with KOLO_HAVE_CUDA.
#include <cuda_runtime.h>

#include <cstdlib>
#include <functional>
#include <memory>
#include <string>

#include "cuda/cuda_backend.h"
#include "in_place_device.h"

namespace kolo {
namespace testing {
namespace {

// How long NCCL may take to make a communicator, accept a call or shrink one before kolo gives up on it:
// well inside the jobs' own bound (tools/gpu/run_gpu_in_place.sh gives each 90 s).
constexpr double kCommTimeoutSeconds = 30.0;

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v != nullptr ? std::atoi(v) : fallback;
}

struct HostWork {
  std::function<void()> work;
};

void CUDART_CB run_host_work(void* data) {
  std::unique_ptr<HostWork> w(static_cast<HostWork*>(data));
  w->work();  // no CUDA call in here (host functions may make none)
}

}  // namespace

std::unique_ptr<InPlaceDevice> make_cuda_in_place_device(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    *why = std::string("no GPU is usable (cudaGetDeviceCount: ") + (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices") +
           ")";
    return nullptr;
  }
  const int rank = env_int("OMPI_COMM_WORLD_RANK", 0);
  const int local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0);
  const int local_size = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 1);
  if (local_size > count && std::getenv("NCCL_HOSTID") == nullptr) {
    const std::string host = "kolo-" + std::to_string(rank);
    setenv("NCCL_HOSTID", host.c_str(), 1);
    setenv("NCCL_SOCKET_IFNAME", "lo", 0);
  }
  auto device = std::make_unique<InPlaceDevice>();
  device->backend = make_cuda_backend(kCommTimeoutSeconds);
  device->ordinal = local_rank % count;  // rank % GPUs on one host
  device->what = device->backend->description() + "; " + gpus_seen() + "; this rank on cuda:" +
                 std::to_string(device->ordinal) +
                 (std::getenv("NCCL_HOSTID") != nullptr ? std::string(", NCCL_HOSTID ") + std::getenv("NCCL_HOSTID") : "");
  device->on_stream = [](DeviceStream stream, std::function<void()> work) {
    auto* w = new HostWork{std::move(work)};
    const cudaError_t r = cudaLaunchHostFunc(static_cast<cudaStream_t>(stream), run_host_work, w);
    if (r != cudaSuccess) {
      delete w;
      return Status::Internal(std::string("cudaLaunchHostFunc: ") + cudaGetErrorString(r));
    }
    return Status::OK();
  };
  return device;
}

}  // namespace testing
}  // namespace kolo
