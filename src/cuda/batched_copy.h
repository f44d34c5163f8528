// Launches kolo's batched copy kernel (batch_math.h has what it computes).
#pragma once

#include <vector>

#include "comm/device/device.h"

namespace kolo {

Status launch_batched_copy(const std::vector<CopyPiece>& pieces, const CopyTransform& transform,
                           DeviceStream stream);

}  // namespace kolo
