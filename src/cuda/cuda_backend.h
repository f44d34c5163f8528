// The device seam's real implementation: the CUDA runtime for memory, streams, events and kolo's
// batched copy kernel; NCCL for communicators.
#pragma once

#include <memory>

#include "comm/device/device.h"

namespace kolo {

// `comm_timeout_seconds`: how long NCCL may take to make a communicator or accept a call before
// kolo gives up on it (a peer that never comes).
std::unique_ptr<DeviceBackend> make_cuda_backend(double comm_timeout_seconds);

// "13.0" and "2.28.9": what this build was compiled against, for build_info().
const char* cuda_build_version();
const char* nccl_build_version();
// The NCCL GPU ops use in this process, loading it as the first would: "2.30.7 (PATH, already loaded)",
// or why none can be.
std::string nccl_runtime();
// "1 GPU: NVIDIA H100 80GB HBM3", or why no GPU is usable.
std::string gpus_seen();

}  // namespace kolo
