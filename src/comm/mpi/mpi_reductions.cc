#include "comm/mpi/mpi_reductions.h"

#include "comm/mpi/mpi_types.h"

namespace kolo {

Status MpiReductions::create() {
  Status s = create_16bit_ops(DataType::kFloat16, half_ops_[0]);
  if (s.ok()) s = create_16bit_ops(DataType::kBFloat16, half_ops_[1]);
  created_ = s.ok();
  return s;
}

MpiReductions::~MpiReductions() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || !created_) return;
  for (auto& row : half_ops_) {
    for (MPI_Op& op : row) {
      if (op != MPI_OP_NULL) MPI_Op_free(&op);
    }
  }
}

MPI_Datatype MpiReductions::datatype(DataType dtype) const { return mpi_datatype(dtype); }

MPI_Op MpiReductions::op(DataType dtype, ReduceOp op) const {
  if (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) {
    return half_ops_[dtype == DataType::kFloat16 ? 0 : 1][static_cast<int>(op)];
  }
  return mpi_builtin_op(reduction_for(dtype, op));
}

}  // namespace kolo
