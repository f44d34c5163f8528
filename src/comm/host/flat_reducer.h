// Reduces a segment over every rank at once (allreduce.cc's flat path).
#pragma once

#include <cstdint>
#include <vector>

#include "comm/allreduce_choice.h"
#include "comm/group.h"
#include "comm/host/segment_reducer.h"

namespace kolo {

class FlatReducer : public SegmentReducer {
 public:
  // Each segment by what comm/allreduce_choice.h chooses for it, flat: recursive doubling
  // (recursive_doubling.h: its waits give up on a lost peer, so a caller's thread may run it), kolo's
  // ring (ring_allreduce.h) or the group's own allreduce (MPI_Allreduce under MPI).
  FlatReducer(Group& group, const JobShape& job) : group_(group), job_(job) {}
  Status start(const void* send, void* recv, int count, DataType dtype, ReduceOp op) override;

 private:
  Group& group_;
  JobShape job_;
  std::vector<char> scratch_;
};

}  // namespace kolo
