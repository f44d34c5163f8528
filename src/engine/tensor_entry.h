// One submitted operation on this rank: the request it sent, the caller's memory, and where its
// result goes. The engine owns it from enqueue until it completes.
#pragma once

#include <cstdint>
#include <memory>
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
  Status deferred_error;            // a local failure that waits until the collective is done
};

// Gives the entry an output of `shape` (its dtype and device): the caller's allocator if it gave
// one, checked, else memory kolo owns and hands over through Output::storage. When the caller's
// allocator fails on the CPU, the entry gets kolo's memory anyway and keeps the failure in
// deferred_error: the op fails once the collective, which the other ranks run, is done.
Status allocate_output(TensorEntry& entry, const std::vector<int64_t>& shape);

// What a joined rank takes part in an op with, in place of an entry of its own: the op's identity
// for a reduction, no rows for an allgather, a scratch buffer to receive a broadcast. handle 0.
Status make_stand_in(const Response& response, int rank, std::unique_ptr<TensorEntry>* out);

}  // namespace kolo
