// The sum of several inputs into one output, element by element, left to right ((a + b) + c ...), in
// loops the compiler vectorizes: what kolo's shared-memory allreduce (comm/shm/) reduces with, where
// an MPI op would take one input at a time and a call per input.
#pragma once

#include <cstdint>

#include "kolo/tensor.h"

namespace kolo {

// out[i] = in[0][i] + in[1][i] + ... + in[n-1][i] for `count` elements of `dtype`; `out` may be one of
// the inputs. False (nothing written) for a dtype it has no loop for: float32, float64, int32 and
// int64 it has.
bool sum_inputs(DataType dtype, const char* const* in, int n, char* out, int64_t count);

}  // namespace kolo
