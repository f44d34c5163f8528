// Host memory kolo owns: 64-byte aligned (whole cache lines, and vector loads), never null, so even
// an empty result has a valid pointer.
#pragma once

#include <cstdint>
#include <memory>

#include "kolo/status.h"

namespace kolo {

Status host_memory(int64_t bytes, std::shared_ptr<void>* storage);

}  // namespace kolo
