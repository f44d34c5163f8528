// Seconds on the monotonic clock, as a double: what timeouts, stall checks and the timeline use.
#pragma once

#include <time.h>

#include <chrono>

namespace kolo {

inline double steady_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// A relative timeout for the system calls that take one (futex, ppoll).
inline timespec to_timespec(std::chrono::microseconds d) {
  const long long us = d.count();
  return timespec{static_cast<time_t>(us / 1000000), static_cast<long>(us % 1000000) * 1000};
}

}  // namespace kolo
