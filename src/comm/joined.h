// A rank in join() takes part in the other ranks' ops without a tensor of its own (Piece::joined).
// Before running, a collective gives such pieces memory of its kind: for an allreduce filled with
// the op's identity (zeros for a sum, ...), for a broadcast scratch to receive into. A joined
// allgather piece contributes no rows and needs no input.
#pragma once

#include <functional>

#include "comm/collective.h"

namespace kolo {

// Writes `count` elements of the identity of `op` at `data` (memory of the collective's kind).
using FillIdentity = std::function<Status(DataType dtype, ReduceOp op, void* data, int64_t count)>;

Status prepare_joined_pieces(CollectiveCall& call, const OwnMemory& own, const FillIdentity& fill);

}  // namespace kolo

namespace kolo {

// The same in host memory, for the host collectives.
Status prepare_host_joined_pieces(CollectiveCall& call);

}  // namespace kolo
