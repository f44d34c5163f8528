// A float32 Sum allreduce request, as the unit tests of negotiation submit them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "engine/message.h"

namespace kolo {
namespace testing {

inline Request allreduce_request(int rank, const std::string& name, std::vector<int64_t> shape = {8}) {
  Request q;
  q.name = name;
  q.rank = rank;
  q.kind = OpKind::kAllreduce;
  q.dtype = DataType::kFloat32;
  q.reduce_op = ReduceOp::kSum;
  q.shape = std::move(shape);
  return q;
}

}  // namespace testing
}  // namespace kolo
