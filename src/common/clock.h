// Seconds on the monotonic clock, as a double: what timeouts, stall checks and the timeline use.
#pragma once

#include <chrono>

namespace kolo {

inline double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace kolo
