// How kolo's own point-to-point allreduces (recursive_doubling.h, ring_allreduce.h) combine a peer's
// block with this rank's.
#pragma once

#include <cstddef>
#include <functional>

namespace kolo {

// into = from (+) into, `bytes` each, as MPI_Reduce_local.
using CombineBytes = std::function<void(const char* from, char* into, size_t bytes)>;

}  // namespace kolo
