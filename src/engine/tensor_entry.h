// One submitted operation on this rank: the request it sent, the caller's memory, and where its
// result goes. The engine owns it from enqueue until it completes.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "comm/collective.h"
#include "engine/message.h"
#include "kolo/types.h"

namespace kolo {

// A member added here must be reset in reset_for_reuse() too.
struct TensorEntry {
  Request request;
  TensorView input;
  TensorView output;                // set at enqueue, or by allocate_output()
  std::vector<int64_t> splits;      // alltoall: rows sent to each rank
  OutputAllocator allocate;
  int64_t handle = 0;
  double enqueued_at = 0.0;         // steady seconds; 0 unless the engine stamps submissions (a timeline)
  // Device tensors: an event recorded on the input's stream at enqueue, on the caller's thread, so
  // that the collective starts after what the caller had queued to produce the input. Owned by
  // `ready_owner` (null for host tensors).
  void* ready_event = nullptr;
  std::shared_ptr<void> ready_owner;
  Output result;                    // handed to wait()
  Status deferred_error;            // a local failure that waits until the collective is done
};

// Makes `entry` a new entry again, keeping its strings' and vectors' memory for the next op that
// reuses it (TensorQueue's spares).
void reset_for_reuse(TensorEntry* entry);

// Gives the entry an output of `shape` (its dtype and device): the caller's allocator if it gave
// one, checked, else memory from `own`, handed over through Output::storage. When the caller's
// allocator fails, the entry gets `own` memory anyway and keeps the failure in deferred_error: the
// op fails once the collective, which the other ranks run, is done.
Status allocate_output(TensorEntry& entry, const std::vector<int64_t>& shape, const OwnMemory& own);

}  // namespace kolo
