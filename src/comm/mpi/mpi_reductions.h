// MPI's names for kolo's dtypes and reduce ops, per communicator family: MPI has no 16-bit float types,
// which travel as MPI_UINT16_T and are reduced by kolo's own user ops (comm/mpi/mpi_types.h), made once
// for a context and freed with it.
#pragma once

#include <mpi.h>

#include "kolo/status.h"
#include "kolo/types.h"

namespace kolo {

class MpiReductions {
 public:
  MpiReductions() = default;
  ~MpiReductions();
  MpiReductions(const MpiReductions&) = delete;
  MpiReductions& operator=(const MpiReductions&) = delete;
  Status create();

  MPI_Datatype datatype(DataType dtype) const;
  MPI_Op op(DataType dtype, ReduceOp op) const;

 private:
  // [fp16 or bf16][reduce op]
  MPI_Op half_ops_[2][kNumReduceOps];
  bool created_ = false;
};

}  // namespace kolo
