// kolo's own element-wise reduction, bit for bit what Open MPI 4.1's MPI_Reduce_local computes with
// kolo's mapping (comm/mpi/mpi_types.cc), so that a world without MPI reduces as the MPI world always has
// and both give the same bits. Open MPI on x86-64 reduces through its "avx" op component, whose results
// depend on where an element sits in the call's buffer: its SIMD loops cover the whole 16-byte blocks
// from the buffer's start, and its scalar loop the last elements (fewer than 16 bytes). The two differ:
//   - int8, uint8, int16 and uint16 sums saturate in the blocks (adds) and wrap in the tail;
//   - float and double max and min: where either is a NaN, or both are zeros of any sign, the blocks keep
//     `into`'s element and the tail takes `from`'s (as is: a signaling NaN stays signaling);
//   - float and double sums and products of two NaNs: the blocks give `from`'s NaN and the tail `into`'s
//     (quieted; one NaN gives that NaN, quieted, wherever it sits).
// Every other case is plain IEEE arithmetic, and integers wrap. Elsewhere than x86 (no avx component),
// every element reduces as the tail does. float16 and bfloat16 reduce in float (cpu/kernels.h), as the
// MPI world's user ops do. Adasum is not element-wise: these leave the output as it is.
#pragma once

#include <cstdint>

#include "kolo/types.h"

namespace kolo {

// into[i] = op(from[i], into[i]) for `count` elements of `dtype`, as MPI_Reduce_local(from, into, count,
// type, op) does; bools reduce by reduction_for (Max or Min on their bytes), an Average as a Sum. `from`
// and `into` do not overlap (as MPI requires). Results depend on the call's boundaries (above): a buffer
// reduced in pieces reduces as MPI would reduce those pieces.
void reduce_into(DataType dtype, ReduceOp op, const void* from, void* into, int64_t count);

// The instruction sets reduce_into's loops are built for: AVX2 and AVX-512 on x86-64 (with GCC or clang),
// else the baseline only. reduce_into runs the best the CPU has; each gives the same bits.
enum class ReduceIsa { kBaseline = 0, kAvx2 = 1, kAvx512 = 2 };
ReduceIsa best_reduce_isa();
// reduce_into with the loops built for `isa`, or for best_reduce_isa() where `isa` is beyond it: for
// the tests, which check every one the CPU has, and benchmarks.
void reduce_into(ReduceIsa isa, DataType dtype, ReduceOp op, const void* from, void* into, int64_t count);

// Folds the `n` inputs of `count` elements into `out` in a fixed order, so that every rank that reduces
// the same inputs gets the same bits: where `out` is one of the inputs, that one first, else a copy of
// inputs[0]; then the others in order, by reduce_into. Sums of float32, float64, int32 and int64 (n >= 2)
// take cpu/sum_inputs.h's loops instead ((in[0] + in[1]) + ...). `out` may be one of the inputs.
void reduce_inputs(DataType dtype, ReduceOp op, const char* const* inputs, int n, char* out, int64_t count);

}  // namespace kolo
