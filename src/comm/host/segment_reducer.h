// How the CPU allreduce (allreduce.cc) reduces its segments, one implementation per path: flat over
// every rank (flat_reducer.h), through the host's shared memory (shm_reducer.h), or hierarchically
// inside and across hosts (hierarchical_reducer.h).
#pragma once

#include <cstdint>

#include "kolo/status.h"
#include "kolo/types.h"

namespace kolo {

// Reduces segments: `count` elements of `dtype` from `send` (null: from `recv`) into `recv` on every
// rank. start() may return before the segment is done; up to depth() segments are in flight, and
// finish_oldest() ends the oldest (its result is then in its `recv`). Every rank starts and finishes
// the same segments in the same order, so the collectives inside agree.
class SegmentReducer {
 public:
  virtual ~SegmentReducer() = default;
  virtual int depth() const { return 1; }
  virtual Status start(const void* send, void* recv, int count, DataType dtype, ReduceOp op) = 0;
  virtual Status finish_oldest() { return Status::OK(); }
  // After an error: waits for what is in flight and forgets it.
  virtual void abandon() {}
};

}  // namespace kolo
