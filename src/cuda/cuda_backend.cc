#include "cuda/cuda_backend.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <functional>
#include <string>

#include "cuda/batched_copy.h"
#include "cuda/cuda_status.h"
#include "cuda/nccl_comm.h"
#include "cuda/nccl_library.h"

#define KOLO_STR_(x) #x
#define KOLO_STR(x) KOLO_STR_(x)

namespace kolo {
namespace {

std::string version_text(int v, int major_div, int minor_div, int minor_mod) {
  return std::to_string(v / major_div) + "." + std::to_string(v / minor_div % minor_mod);
}

void CUDART_CB run_host_callback(void* data) {
  auto* callback = static_cast<std::function<void()>*>(data);
  (*callback)();
  delete callback;
}

class CudaBackend : public DeviceBackend {
 public:
  explicit CudaBackend(double comm_timeout) : comm_timeout_(comm_timeout) {}

  std::string description() const override {
    int runtime = 0;
    cudaRuntimeGetVersion(&runtime);
    // NCCL is loaded at the first GPU op that needs it (nccl_library.h), not to describe it.
    const std::string nccl = nccl_version_if_loaded();
    return "CUDA " + version_text(runtime, 1000, 10, 100) + ", NCCL " +
           (nccl.empty() ? std::string("(loaded at the first GPU collective)") : nccl);
  }

  Status usable() override {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
      return Status::Unsupported(std::string("no GPU is usable (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")");
    }
    if (count == 0) return Status::Unsupported("no GPU is usable (no CUDA device)");
    return Status::OK();
  }

  Status bind(int ordinal) override {
    return cuda_status(cudaSetDevice(ordinal), "cudaSetDevice(" + std::to_string(ordinal) + ")");
  }

  int bound() const override {
    int ordinal = -1;
    return cudaGetDevice(&ordinal) == cudaSuccess ? ordinal : -1;
  }

  Status allocate(int ordinal, int64_t bytes, void** data) override {
    DeviceGuard guard(ordinal);
    if (!guard.status().ok()) return guard.status();
    // Never a null pointer, even for nothing: results of no elements still have an address.
    return cuda_status(cudaMalloc(data, static_cast<size_t>(bytes > 0 ? bytes : 1)),
                       "cudaMalloc of " + std::to_string(bytes) + " bytes on cuda:" + std::to_string(ordinal));
  }

  void free(void* data) override { cudaFree(data); }

  Status copy(void* dst, const void* src, int64_t bytes, DeviceStream stream) override {
    if (bytes == 0) return Status::OK();
    return cuda_status(cudaMemcpyAsync(dst, src, static_cast<size_t>(bytes), cudaMemcpyDefault,
                                       static_cast<cudaStream_t>(stream)),
                       "cudaMemcpyAsync");
  }

  Status create_stream(int ordinal, DeviceStream* stream) override {
    DeviceGuard guard(ordinal);
    if (!guard.status().ok()) return guard.status();
    // The highest priority: communication is on the critical path of the step.
    int least = 0, greatest = 0;
    cudaDeviceGetStreamPriorityRange(&least, &greatest);
    cudaStream_t s = nullptr;
    KOLO_CUDA_RETURN_IF_ERROR(cudaStreamCreateWithPriority(&s, cudaStreamNonBlocking, greatest), "cudaStreamCreateWithPriority");
    *stream = s;
    return Status::OK();
  }

  void destroy_stream(DeviceStream stream) override { cudaStreamDestroy(static_cast<cudaStream_t>(stream)); }

  Status create_event(int ordinal, bool timing, DeviceEvent* event) override {
    DeviceGuard guard(ordinal);
    if (!guard.status().ok()) return guard.status();
    cudaEvent_t e = nullptr;
    KOLO_CUDA_RETURN_IF_ERROR(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming),
                              "cudaEventCreateWithFlags");
    *event = e;
    return Status::OK();
  }

  void destroy_event(DeviceEvent event) override { cudaEventDestroy(static_cast<cudaEvent_t>(event)); }

  Status record(DeviceEvent event, DeviceStream stream) override {
    return cuda_status(cudaEventRecord(static_cast<cudaEvent_t>(event), static_cast<cudaStream_t>(stream)),
                       "cudaEventRecord");
  }

  Status wait(DeviceStream stream, DeviceEvent event) override {
    return cuda_status(cudaStreamWaitEvent(static_cast<cudaStream_t>(stream), static_cast<cudaEvent_t>(event), 0),
                       "cudaStreamWaitEvent");
  }

  Status query(DeviceEvent event, bool* done) override {
    const cudaError_t e = cudaEventQuery(static_cast<cudaEvent_t>(event));
    *done = e == cudaSuccess;
    if (e == cudaSuccess || e == cudaErrorNotReady) {
      if (e == cudaErrorNotReady) cudaGetLastError();  // not an error: do not leave it sticky for others
      return Status::OK();
    }
    return cuda_status(e, "cudaEventQuery");
  }

  Status synchronize(DeviceEvent event) override {
    return cuda_status(cudaEventSynchronize(static_cast<cudaEvent_t>(event)), "cudaEventSynchronize");
  }

  Status host_callback(DeviceStream stream, std::function<void()> callback) override {
    // cudaLaunchHostFunc runs it on CUDA's callback thread once the stream's work before it has ended;
    // the function only signals (it must not call CUDA or NCCL). It owns its copy of the callback.
    auto* owned = new std::function<void()>(std::move(callback));
    const cudaError_t e = cudaLaunchHostFunc(static_cast<cudaStream_t>(stream), &run_host_callback, owned);
    if (e != cudaSuccess) delete owned;
    return cuda_status(e, "cudaLaunchHostFunc");
  }

  Status elapsed(DeviceEvent start, DeviceEvent end, double* seconds) override {
    float ms = 0;
    KOLO_CUDA_RETURN_IF_ERROR(
        cudaEventElapsedTime(&ms, static_cast<cudaEvent_t>(start), static_cast<cudaEvent_t>(end)), "cudaEventElapsedTime");
    *seconds = ms / 1000.0;
    return Status::OK();
  }

  Status batched_copy(const std::vector<CopyPiece>& pieces, const CopyTransform& transform,
                      DeviceStream stream) override {
    return launch_batched_copy(pieces, transform, stream);
  }

  Status unique_id(std::string* id) override {
    const NcclApi* api = nullptr;
    Status s = nccl_api(&api);
    if (!s.ok()) return s;
    ncclUniqueId u;
    s = nccl_status(api->GetUniqueId(&u), "ncclGetUniqueId");
    if (!s.ok()) return s;
    id->assign(u.internal, sizeof(u.internal));
    return Status::OK();
  }

  Status create_comm(int ordinal, const CommMembers& members, std::unique_ptr<DeviceComm>* comm) override {
    return make_nccl_comm(ordinal, members, comm_timeout_, comm);
  }

 private:
  double comm_timeout_;
};

}  // namespace

std::unique_ptr<DeviceBackend> make_cuda_backend(double comm_timeout_seconds) {
  return std::make_unique<CudaBackend>(comm_timeout_seconds);
}

const char* cuda_build_version() {
  static const std::string v = version_text(CUDART_VERSION, 1000, 10, 100);
  return v.c_str();
}

std::string gpus_seen() {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) return std::string("no GPU is usable (") + cudaGetErrorString(e) + ")";
  if (count == 0) return "no GPU is usable (no CUDA device)";
  cudaDeviceProp p;
  const std::string name = cudaGetDeviceProperties(&p, 0) == cudaSuccess ? p.name : "?";
  return std::to_string(count) + (count == 1 ? " GPU: " : " GPUs, the first: ") + name;
}

std::string nccl_runtime() { return nccl_loaded_description(); }

const char* nccl_build_version() { return KOLO_STR(NCCL_MAJOR) "." KOLO_STR(NCCL_MINOR) "." KOLO_STR(NCCL_PATCH); }

}  // namespace kolo
