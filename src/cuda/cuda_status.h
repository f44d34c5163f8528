// CUDA and NCCL results as kolo Status, with the libraries' own words.
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <string>

#include "kolo/status.h"

namespace kolo {

inline Status cuda_status(cudaError_t e, const std::string& what) {
  if (e == cudaSuccess) return Status::OK();
  return Status::Internal(what + " failed: " + cudaGetErrorName(e) + ": " + cudaGetErrorString(e));
}

// `comm` may be null (before a communicator exists); else NCCL's last message for it is added. In the
// words of the NCCL kolo loaded (cuda/nccl_library.h).
Status nccl_status(ncclResult_t r, const std::string& what, ncclComm_t comm = nullptr);

#define KOLO_CUDA_RETURN_IF_ERROR(call, what)            \
  do {                                                   \
    const cudaError_t kolo_cuda_e_ = (call);             \
    if (kolo_cuda_e_ != cudaSuccess) return ::kolo::cuda_status(kolo_cuda_e_, what); \
  } while (0)

// Makes `ordinal` the calling thread's device for a scope, and gives the previous one back.
class DeviceGuard {
 public:
  explicit DeviceGuard(int ordinal) {
    if (cudaGetDevice(&previous_) != cudaSuccess) previous_ = -1;
    if (previous_ != ordinal) status_ = cuda_status(cudaSetDevice(ordinal), "cudaSetDevice(" + std::to_string(ordinal) + ")");
  }
  ~DeviceGuard() {
    int now = -1;
    if (previous_ >= 0 && cudaGetDevice(&now) == cudaSuccess && now != previous_) cudaSetDevice(previous_);
  }
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  const Status& status() const { return status_; }

 private:
  int previous_ = -1;
  Status status_;
};

}  // namespace kolo
