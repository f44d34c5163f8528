// The GPU collective suites' inputs: the CPU suite's values (mpi/collective_values.h) in host
// buffers of any shape, to upload, and the ops each reduction runs through.
#pragma once

#include <utility>
#include <vector>

#include "gpu/gpu_test_util.h"
#include "mpi/collective_values.h"

namespace kolo {
namespace testing {

// `seed` shifts the values, so that tensors in flight together differ.
inline Buffer input_for(DataType dtype, std::vector<int64_t> shape, ReduceOp op, int seed = 0) {
  Buffer b(dtype, std::move(shape));
  for (size_t i = 0; i < b.size(); ++i) {
    b.set(i, op == ReduceOp::kProduct ? factor_value(i, rank() + seed) : value(i + static_cast<size_t>(seed), rank()));
  }
  return b;
}

inline constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                                    ReduceOp::kProduct};

}  // namespace testing
}  // namespace kolo
