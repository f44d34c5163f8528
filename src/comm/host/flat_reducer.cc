#include "comm/host/flat_reducer.h"

#include <cstring>

#include "comm/host/combine_bytes.h"
#include "comm/host/recursive_doubling.h"
#include "comm/host/ring_allreduce.h"
#include "comm/host/tags.h"

namespace kolo {

Status FlatReducer::start(const void* send, void* recv, int count, DataType dtype, ReduceOp op) {
  const size_t elem = dtype_size(dtype);
  const size_t bytes = static_cast<size_t>(count) * elem;
  const AllreduceAlgorithm algorithm = choose_allreduce(DeviceType::kCPU, static_cast<int64_t>(bytes), job_, false);
  if (algorithm == AllreduceAlgorithm::kMpiAllreduce) return group_.allreduce(send, recv, count, dtype, op, "allreduce");
  if (send != nullptr) std::memcpy(recv, send, bytes);
  const CombineBytes combine = combine_for(dtype, op);
  if (algorithm == AllreduceAlgorithm::kRecursiveDoubling) {
    if (scratch_.size() < bytes) scratch_.resize(bytes);
    return recursive_doubling_allreduce(group_, tags::kFlatAllreduce, static_cast<char*>(recv), scratch_.data(), bytes,
                                        combine, "allreduce (recursive doubling)");
  }
  const size_t scratch = ring_scratch_bytes(count, elem, group_.size());
  if (scratch_.size() < scratch) scratch_.resize(scratch);
  return ring_allreduce(group_, tags::kFlatAllreduce, static_cast<char*>(recv), scratch_.data(), count, elem, combine,
                        "allreduce (ring)");
}

}  // namespace kolo
