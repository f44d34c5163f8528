// CPU element loops: the scaling applied around a reduction, and the arithmetic MPI lacks for
// 16-bit floats. Scaling multiplies in double precision whatever the dtype, so a float32 average
// of integers is exact, and the result does not depend on how a buffer was cut into segments.
#pragma once

#include <cstdint>

#include "kolo/types.h"

namespace kolo {

// What to do to each element on the way into or out of a reduction.
struct Scaling {
  double factor = 1.0;   // multiply (integers: in double precision, truncated toward zero)
  int64_t divisor = 1;   // integers: then divide, truncating (Average)

  bool identity() const { return factor == 1.0 && divisor == 1; }
};

// The scaling after a reduction of `op` across `size` contributing ranks, with the caller's postscale.
Scaling post_scaling(DataType dtype, ReduceOp op, double postscale, int size);

// dst[i] = scaling(src[i]) for `count` elements; dst may equal src.
void scale_into(DataType dtype, const void* src, void* dst, int64_t count, const Scaling& scaling);

// The same for float32 to and from float16 or bfloat16 (compression): the value scaled in double
// precision and rounded once to `to` (16-bit types through float, as everywhere in kolo). Equal
// dtypes: scale_into.
void cast_into(DataType from, DataType to, const void* src, void* dst, int64_t count, const Scaling& scaling);

// Fills `count` elements with the identity of `op` (0 for Sum and Average, the largest value for
// Min, the smallest for Max, 1 for Product): what a joined rank contributes.
void fill_identity(DataType dtype, ReduceOp op, void* data, int64_t count);

// inout[i] = op(in[i], inout[i]) for float16 or bfloat16 elements, computed in float.
void reduce_16bit(DataType dtype, ReduceOp op, const uint16_t* in, uint16_t* inout, int64_t count);

}  // namespace kolo
