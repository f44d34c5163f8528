// How kolo's own point-to-point algorithms (recursive_doubling.h, ring_allreduce.h, the hierarchical
// crossing) combine a peer's block with this rank's.
#pragma once

#include <cstddef>
#include <functional>

#include "kolo/types.h"

namespace kolo {

// into = from (+) into, `bytes` each, as MPI_Reduce_local.
using CombineBytes = std::function<void(const char* from, char* into, size_t bytes)>;

// `op` on elements of `dtype`, exactly as Open MPI reduces them (cpu/reduce.h), so that both worlds give
// the same bits.
CombineBytes combine_for(DataType dtype, ReduceOp op);

}  // namespace kolo
