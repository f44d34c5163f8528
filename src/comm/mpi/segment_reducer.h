// How MpiAllreduce (mpi_allreduce.cc) reduces its segments, one implementation per path: flat over
// every rank (flat_reducer.h) or hierarchically inside and across hosts (hierarchical_reducer.h).
#pragma once

#include <mpi.h>

#include "comm/mpi/combine_bytes.h"
#include "kolo/status.h"

namespace kolo {

// Reduces segments: `count` elements from `send` (MPI_IN_PLACE: from `recv`) into `recv` on every
// rank. start() may return before the segment is done; up to depth() segments are in flight, and
// finish_oldest() ends the oldest (its result is then in its `recv`). Every rank starts and finishes
// the same segments in the same order, so the collectives inside agree.
class SegmentReducer {
 public:
  virtual ~SegmentReducer() = default;
  virtual int depth() const { return 1; }
  virtual Status start(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op) = 0;
  virtual Status finish_oldest() { return Status::OK(); }
  // After an error: waits for what is in flight and forgets it.
  virtual void abandon() {}
};

// How kolo's point-to-point allreduces combine a peer's block with this rank's: MPI_Reduce_local.
CombineBytes combine_with(MPI_Datatype type, MPI_Op op);

}  // namespace kolo
