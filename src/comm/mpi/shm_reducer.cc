#include "comm/mpi/shm_reducer.h"

#include <cstring>

#include "cpu/sum_inputs.h"

namespace kolo {

MpiReduceInto::MpiReduceInto(MPI_Datatype type, MPI_Op op) : type_(type), op_(op) {
  int size = 0;
  MPI_Type_size(type, &size);
  elem_ = static_cast<size_t>(size);
  if (op != MPI_SUM) return;
  if (type == MPI_FLOAT) fast_dtype_ = static_cast<int>(DataType::kFloat32);
  if (type == MPI_DOUBLE) fast_dtype_ = static_cast<int>(DataType::kFloat64);
  if (type == MPI_INT32_T) fast_dtype_ = static_cast<int>(DataType::kInt32);
  if (type == MPI_INT64_T) fast_dtype_ = static_cast<int>(DataType::kInt64);
}

void MpiReduceInto::operator()(const char* const* inputs, int n, char* out, size_t bytes) const {
  const int64_t count = static_cast<int64_t>(bytes / elem_);
  if (fast_dtype_ >= 0 && sum_inputs(static_cast<DataType>(fast_dtype_), inputs, n, out, count)) return;
  // Folded into the input that is `out` (else a copy of the first), the others in order: a fixed order,
  // so that the rank that reduces a piece and the ranks that reduce all of it get the same bits.
  int first = 0;
  while (first < n && inputs[first] != out) ++first;
  if (first == n) {
    first = 0;
    std::memcpy(out, inputs[0], bytes);
  }
  for (int j = 0; j < n; ++j) {
    if (j != first) MPI_Reduce_local(inputs[j], out, static_cast<int>(count), type_, op_);
  }
}

ShmGroup* on_one_host_shm(const MpiContext& mpi, int64_t row_bytes) {
  ShmGroup* group = mpi.host_shm();
  if (group == nullptr || mpi.topology().cross_size != 1 || row_bytes <= 0) return nullptr;
  return static_cast<size_t>(row_bytes) * static_cast<size_t>(group->size()) <= group->slot_bytes() ? group : nullptr;
}

Status ShmReducer::start(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op) {
  const MpiReduceInto reduce(type, op);
  const char* in = send == MPI_IN_PLACE ? static_cast<const char*>(recv) : static_cast<const char*>(send);
  return group_->allreduce(in, static_cast<char*>(recv), count, reduce.elem(), reduce);
}

}  // namespace kolo
