// One submitted operation on this rank: the request it sent, the caller's memory, and where its
// result goes. The engine owns it from enqueue until it completes.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/message.h"
#include "kolo/kolo.h"

namespace kolo {

struct TensorEntry {
  Request request;
  TensorView input;
  TensorView output;                // set at enqueue, or by allocate_output()
  std::vector<int64_t> splits;      // alltoall: rows sent to each rank
  OutputAllocator allocate;
  DoneCallback on_done;
  int64_t handle = 0;
  double enqueued_at = 0.0;         // steady seconds
  Output result;                    // handed to wait()
};

// Gives the entry an output of `shape` (its dtype and device): the caller's allocator if it gave
// one, checked, else memory kolo owns and hands over through Output::storage.
Status allocate_output(TensorEntry& entry, const std::vector<int64_t>& shape);

}  // namespace kolo
