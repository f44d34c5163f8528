// An integer scaled by a floating-point factor (Horovod's prescale and postscale on integer tensors),
// the same on kolo's CPU path and in its GPU kernels: the product in double, truncated toward zero
// and held to int64's range (NaN gives 0); the caller then narrows to its type.
#pragma once

#include <cstdint>

#include "common/hd.h"

namespace kolo {

KOLO_HD inline int64_t scaled_integer(int64_t x, double factor) {
  const double v = static_cast<double>(x) * factor;
  if (!(v == v)) return 0;
  if (v >= 9223372036854775807.0) return INT64_MAX;
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

}  // namespace kolo
