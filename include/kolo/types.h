// kolo's vocabulary: the types every layer speaks (the API, the engine, the ways bytes move), kept
// apart from the API's functions so that lower layers need not include the API.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kolo/export.h"
#include "kolo/status.h"
#include "kolo/tensor.h"

namespace kolo {

// KOLO_* settings that take precedence over the environment, e.g. {{"KOLO_FUSION_THRESHOLD_BYTES", "0"}}.
using Settings = std::map<std::string, std::string>;

// Values are part of the C ABI and wire format: append, never renumber.
enum class ReduceOp : int32_t {
  kSum = 0,
  kAverage = 1,  // sum divided by the number of ranks (integers: truncated, as C does)
  kMin = 2,
  kMax = 3,
  kProduct = 4,
  // Adaptive summation (Maleki et al., "Scaling Distributed Training with Adaptive Summation", 2021):
  // pairs of ranks' tensors a, b combine as (1 - a.b / 2|a|^2) a + (1 - a.b / 2|b|^2) b, per tensor,
  // up a binary tree of the ranks (recursive halving). Floating-point tensors only.
  kAdasum = 5,
};
constexpr int kNumReduceOps = 6;
KOLO_EXPORT const char* reduce_op_name(ReduceOp op);
// The op a reduction of `dtype` runs as: bools reduce logically, Sum, Average and Max as "or",
// Min and Product as "and" (on 0 and 1 these are Max and Min); other dtypes keep their op.
KOLO_EXPORT ReduceOp reduction_for(DataType dtype, ReduceOp op);

// What an allreduce's float32 data travels as between ranks (Horovod's Compression.fp16): cast to 16
// bits when packed into the fusion buffer (in the same pass as the prescale) and back when unpacked
// (with the postscale), so half the bytes cross the wire. Other dtypes travel as they are.
// Values are part of the C ABI and wire format: append, never renumber.
enum class Compression : int32_t {
  kNone = 0,
  kFloat16 = 1,
  kBFloat16 = 2,
};
constexpr int kNumCompressions = 3;
KOLO_EXPORT const char* compression_name(Compression c);
// The dtype a tensor of `dtype` travels as under `c`.
KOLO_EXPORT DataType wire_dtype(DataType dtype, Compression c);

// Runs on kolo's thread once an enqueued operation has finished, successfully or not, before wait()
// returns. Not called for a call rejected at once (its handle carries the error).
using DoneCallback = std::function<void(const Status&)>;
// For operations whose output shape is known only once the ranks agree (allgather, alltoall): called
// on kolo's thread with that shape; fills `out` with memory of that shape, dtype and device.
using OutputAllocator = std::function<Status(const std::vector<int64_t>& shape, TensorView* out)>;

// What an operation produced beyond its status.
struct Output {
  TensorView view;                        // the result (allgather, alltoall)
  std::shared_ptr<void> storage;          // owns `view`'s memory when kolo allocated it
  std::vector<int64_t> received_splits;   // alltoall: rows received from each rank
  int last_joined_rank = -1;              // join: the last rank to join
};

// Reducescatter's rows for `rank`: divided as evenly as possible, lower ranks taking one extra row
// when they do not divide.
KOLO_EXPORT int64_t reducescatter_rows(int64_t total_rows, int rank, int size);

}  // namespace kolo
