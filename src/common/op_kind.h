// The kinds of operation kolo runs: vocabulary shared by the engine (negotiation) and the
// collectives below it.
#pragma once

#include <cstdint>

namespace kolo {

// Values are part of the wire format: append, never renumber.
enum class OpKind : uint8_t {
  kAllreduce = 0,
  kAllgather = 1,
  kBroadcast = 2,
  kAlltoall = 3,
  kReducescatter = 4,
  kBarrier = 5,
  kJoin = 6,  // "this rank has no more data": see Coordinator
};
constexpr int kNumOpKinds = 7;
const char* op_kind_name(OpKind kind);

}  // namespace kolo
