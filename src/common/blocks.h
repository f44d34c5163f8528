// How a buffer of `count` elements is cut among `size` ranks, block i being rank i's: counts differ by
// at most one element, the larger first, so any count works (blocks may be empty). kolo's ring
// (comm/mpi/ring_allreduce.h), its shared-memory collectives (comm/shm/) and reducescatter's rows
// (reducescatter_rows) all cut so: the hierarchical allreduce's stages inside a host and across hosts
// agree on whose block is whose, and a reducescatter may go through shared memory.
#pragma once

#include <cstdint>

namespace kolo {

inline int64_t block_count(int64_t count, int size, int i) { return count / size + (i < count % size ? 1 : 0); }

inline int64_t block_start(int64_t count, int size, int i) {
  return i * (count / size) + (i < count % size ? i : count % size);
}

}  // namespace kolo
