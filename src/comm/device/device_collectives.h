// kolo's collectives for GPU tensors, written once against the device seam (device.h, beside them), so that
// they run on CUDA + NCCL and, in CI, on the tests' host double. One file each.
#pragma once

#include <memory>

#include "comm/collective.h"
#include "comm/device/device_context.h"

namespace kolo {

std::unique_ptr<Collective> make_device_allreduce(DeviceContext& context);
std::unique_ptr<Collective> make_device_hierarchical_allreduce(DeviceContext& context);
std::unique_ptr<Collective> make_device_allgather(DeviceContext& context);
std::unique_ptr<Collective> make_device_hierarchical_allgather(DeviceContext& context);
std::unique_ptr<Collective> make_device_broadcast(DeviceContext& context);
std::unique_ptr<Collective> make_device_alltoall(DeviceContext& context);
std::unique_ptr<Collective> make_device_reducescatter(DeviceContext& context);
// Adasum (ReduceOp::kAdasum), staged through the host Adasum.
std::unique_ptr<Collective> make_device_adasum(DeviceContext& context);

}  // namespace kolo
