// After peers are lost in place: the device communicators the survivors carry into their next job,
// shrunk from the old ones (NCCL's ncclCommShrink) instead of made anew (ncclCommInitRank, a
// bootstrap over the network), where the next job's groups are the old ones less the lost ranks.
#pragma once

#include <mpi.h>

#include <memory>

#include "comm/device/device_context.h"

namespace kolo {

struct SurvivingComms {
  std::unique_ptr<DeviceComm> group[DeviceContext::kGroups];  // by DeviceContext::Group; null: made anew
  int shrunk = 0;
};

// Collective over `survivors` (the job's communicator shrunk by MPI, in the old order): every survivor
// calls it, with its old GPU context or null. The survivors agree which groups can be shrunk (every one
// made it; across hosts only where no survivor's local rank changed), shrink those, and abort every old
// communicator. A shrink that fails leaves that group to be made anew, and says why in the log.
SurvivingComms shrink_device_comms(DeviceContext* old, MPI_Comm survivors, const Status& why);

// The ranks of `comm` that are not in `survivors` (ascending).
std::vector<int> lost_members(MPI_Comm comm, MPI_Comm survivors);

}  // namespace kolo
