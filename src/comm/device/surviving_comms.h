// After peers are lost in place: the device communicators the survivors carry into their next job,
// shrunk from the old ones (NCCL's ncclCommShrink) instead of made anew (ncclCommInitRank, a
// bootstrap over the network), where the next job's groups are the old ones less the lost ranks.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "comm/device/device_context.h"

namespace kolo {

struct SurvivingComms {
  std::unique_ptr<DeviceComm> group[DeviceContext::kGroups];  // by DeviceContext::Group; null: made anew
  int shrunk = 0;
};

// The survivors of a loss, as the world (comm/world.h) agreed on them.
struct Survivors {
  std::vector<int> ranks;                 // each survivor's job rank before the loss
  std::function<bool(int* bits)> agree_and;  // World::agree_and over them
  std::function<void()> progress;            // World::progress
};

// Collective over the survivors: every survivor calls it, with its old GPU context or null. The survivors
// agree which groups can be shrunk (every one made it; across hosts only where no survivor's local rank
// changed), shrink those, and abort every old communicator. A shrink that fails leaves that group to be
// made anew, and says why in the log.
SurvivingComms shrink_device_comms(DeviceContext* old, const Survivors& survivors, const Status& why);

// The places in `members` (job ranks before the loss, in the group's order) whose rank is not among the
// survivors' (ascending).
std::vector<int> lost_members(const std::vector<int>& members, const std::vector<int>& survivors);

}  // namespace kolo
