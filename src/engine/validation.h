// Checks of a call against itself, made at enqueue so that a bad call fails at once, naming the
// tensor and the rank, and nothing is enqueued. Agreement between ranks is checked later, by the
// coordinator (response_builder.h).
#pragma once

#include <string>
#include <vector>

#include "comm/collective.h"
#include "engine/message.h"
#include "kolo/types.h"

namespace kolo {

struct CallSite {
  std::string name;
  OpKind kind;
  int rank;
  int size;
  // What this process can run: a CUDA tensor is refused at once when no collective takes it. Null:
  // host tensors only.
  const CollectiveRegistry* collectives;
  int job_rank = -1;  // the rank messages name (rank and size are then a process set's); -1: rank
};

Status validate_allreduce(const CallSite& c, const TensorView& in, const TensorView& out,
                          ReduceOp op, double prescale, double postscale,
                          Compression compression = Compression::kNone);
Status validate_allgather(const CallSite& c, const TensorView& in);
Status validate_broadcast(const CallSite& c, const TensorView& in, const TensorView& out, int root);
// Resolves empty splits to the even split.
Status validate_alltoall(const CallSite& c, const TensorView& in, std::vector<int64_t>* splits);
Status validate_reducescatter(const CallSite& c, const TensorView& in, const TensorView& out,
                              ReduceOp op, double prescale, double postscale,
                              Compression compression = Compression::kNone);

}  // namespace kolo
