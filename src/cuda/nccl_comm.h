// A DeviceComm over NCCL, made and driven in NCCL's nonblocking mode: every call returns at once
// (ncclInProgress) and kolo polls the communicator, so that it can give up on a peer that never
// comes (ncclCommAbort) instead of hanging inside NCCL.
#pragma once

#include <memory>

#include "comm/device/device.h"

namespace kolo {

// Collective over the members; waits up to `timeout_seconds` for the communicator to be ready.
Status make_nccl_comm(int ordinal, const CommMembers& members, double timeout_seconds,
                      std::unique_ptr<DeviceComm>* comm);

}  // namespace kolo
