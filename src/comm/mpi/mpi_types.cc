#include "comm/mpi/mpi_types.h"

#include "comm/mpi/mpi_status.h"
#include "cpu/kernels.h"

namespace kolo {
namespace {

// MPI user ops get no context pointer, so each (dtype, op) pair is its own function.
template <DataType D, ReduceOp O>
void half_op(void* in, void* inout, int* len, MPI_Datatype*) {
  reduce_16bit(D, O, static_cast<const uint16_t*>(in), static_cast<uint16_t*>(inout), *len);
}

template <DataType D>
Status create_ops(MPI_Op* ops) {
  MPI_User_function* fns[kNumReduceOps] = {half_op<D, ReduceOp::kSum>, half_op<D, ReduceOp::kAverage>,
                                           half_op<D, ReduceOp::kMin>, half_op<D, ReduceOp::kMax>,
                                           half_op<D, ReduceOp::kProduct>, nullptr};  // Adasum: its own algorithm
  for (int i = 0; i < kNumReduceOps; ++i) {
    ops[i] = MPI_OP_NULL;
    if (fns[i] != nullptr) KOLO_MPI_RETURN_IF_ERROR(MPI_Op_create(fns[i], 1, &ops[i]), "MPI_Op_create");
  }
  return Status::OK();
}

}  // namespace

MPI_Datatype mpi_datatype(DataType dtype) {
  switch (dtype) {
    case DataType::kUInt8:
    case DataType::kBool: return MPI_UINT8_T;  // 0 or 1, reduced by MPI_MAX and MPI_MIN (reduction_for)
    case DataType::kInt8: return MPI_INT8_T;
    case DataType::kInt16: return MPI_INT16_T;
    case DataType::kUInt16: return MPI_UINT16_T;
    case DataType::kInt32: return MPI_INT32_T;
    case DataType::kInt64: return MPI_INT64_T;
    case DataType::kFloat16:
    case DataType::kBFloat16: return MPI_UINT16_T;  // reduced by kolo's user ops
    case DataType::kFloat32: return MPI_FLOAT;
    case DataType::kFloat64: return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_builtin_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: return MPI_SUM;
    case ReduceOp::kMin: return MPI_MIN;
    case ReduceOp::kMax: return MPI_MAX;
    case ReduceOp::kProduct: return MPI_PROD;
    case ReduceOp::kAdasum: return MPI_OP_NULL;  // not an MPI op: its own collective
  }
  return MPI_OP_NULL;
}

Status create_16bit_ops(DataType dtype, MPI_Op ops[kNumReduceOps]) {
  return dtype == DataType::kFloat16 ? create_ops<DataType::kFloat16>(ops) : create_ops<DataType::kBFloat16>(ops);
}

}  // namespace kolo
