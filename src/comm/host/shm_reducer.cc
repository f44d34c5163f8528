#include "comm/host/shm_reducer.h"

#include "cpu/reduce.h"

namespace kolo {

void HostReduceInto::operator()(const char* const* inputs, int n, char* out, size_t bytes) const {
  reduce_inputs(dtype_, op_, inputs, n, out, static_cast<int64_t>(bytes / elem()));
}

ShmGroup* on_one_host_shm(const Context& context, int64_t row_bytes) {
  ShmGroup* group = context.host_shm();
  if (group == nullptr || context.topology().cross_size != 1 || row_bytes <= 0) return nullptr;
  return static_cast<size_t>(row_bytes) * static_cast<size_t>(group->size()) <= group->slot_bytes() ? group : nullptr;
}

Status ShmReducer::start(const void* send, void* recv, int count, DataType dtype, ReduceOp op) {
  const HostReduceInto reduce(dtype, op);
  const char* in = send == nullptr ? static_cast<const char*>(recv) : static_cast<const char*>(send);
  return group_->allreduce(in, static_cast<char*>(recv), count, reduce.elem(), reduce);
}

}  // namespace kolo
