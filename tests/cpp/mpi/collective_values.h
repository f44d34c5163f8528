// The values the collective suites feed in (the CPU one here, the GPU one in gpu/) and the results
// they expect of the CPU path, shared so that both suites reduce the same numbers.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>

#include "mpi_test_util.h"

namespace kolo {
namespace testing {

// Small integers: exact in every dtype, and their sums over 4 ranks fit int8.
inline double value(size_t i, int r) { return static_cast<double>((i * 7 + static_cast<size_t>(r) * 3) % 6); }
// 1 or 2: products over 4 ranks stay at most 16.
inline double factor_value(size_t i, int r) { return 1.0 + static_cast<double>((i + static_cast<size_t>(r)) % 2); }

inline double expected_reduction(ReduceOp op, size_t i, int size, const Buffer& like) {
  double acc = op == ReduceOp::kProduct ? 1.0 : op == ReduceOp::kMin ? 1e9 : op == ReduceOp::kMax ? -1e9 : 0.0;
  for (int r = 0; r < size; ++r) {
    const double v = op == ReduceOp::kProduct ? factor_value(i, r) : value(i, r);
    switch (op) {
      case ReduceOp::kSum:
      case ReduceOp::kAverage: acc += v; break;
      case ReduceOp::kMin: acc = std::min(acc, v); break;
      case ReduceOp::kMax: acc = std::max(acc, v); break;
      case ReduceOp::kProduct: acc *= v; break;
      case ReduceOp::kAdasum: break;  // tested against its own reference (adasum_test.cc)
    }
  }
  if (op != ReduceOp::kAverage) return acc;
  // Floating point: sum times 1/size in double, rounded to the dtype. Integers: truncating division.
  if (dtype_is_floating(like.dtype())) return like.rounded(acc * (1.0 / size));
  return std::trunc(acc / size);
}

}  // namespace testing
}  // namespace kolo
