// MPI's names for kolo's dtypes and reduce ops. MPI has no 16-bit float types: those travel as
// MPI_UINT16_T and are reduced by kolo's own user ops (widened to float and narrowed back).
#pragma once

#include <mpi.h>

#include "kolo/types.h"

namespace kolo {

MPI_Datatype mpi_datatype(DataType dtype);
// MPI's op for non-16-bit dtypes; an Average is a sum (the division comes after, cpu/kernels.h).
MPI_Op mpi_builtin_op(ReduceOp op);
// Creates the user ops for float16 or bfloat16, one per ReduceOp (freed with MPI_Op_free).
Status create_16bit_ops(DataType dtype, MPI_Op ops[kNumReduceOps]);

}  // namespace kolo
