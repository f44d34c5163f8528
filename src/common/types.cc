// The vocabulary's helpers (kolo/types.h, common/op_kind.h).
#include "common/blocks.h"
#include "common/op_kind.h"
#include "kolo/types.h"

namespace kolo {

const char* reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::kSum: return "Sum";
    case ReduceOp::kAverage: return "Average";
    case ReduceOp::kMin: return "Min";
    case ReduceOp::kMax: return "Max";
    case ReduceOp::kProduct: return "Product";
    case ReduceOp::kAdasum: return "Adasum";
  }
  return "an unknown reduce op";
}

const char* compression_name(Compression c) {
  switch (c) {
    case Compression::kNone: return "none";
    case Compression::kFloat16: return "fp16";
    case Compression::kBFloat16: return "bf16";
  }
  return "an unknown compression";
}

DataType wire_dtype(DataType dtype, Compression c) {
  if (dtype != DataType::kFloat32 || c == Compression::kNone) return dtype;
  return c == Compression::kFloat16 ? DataType::kFloat16 : DataType::kBFloat16;
}

ReduceOp reduction_for(DataType dtype, ReduceOp op) {
  if (dtype != DataType::kBool) return op;
  return op == ReduceOp::kMin || op == ReduceOp::kProduct ? ReduceOp::kMin : ReduceOp::kMax;
}

int64_t reducescatter_rows(int64_t total_rows, int rank, int size) { return block_count(total_rows, size, rank); }

const char* op_kind_name(OpKind kind) {
  switch (kind) {
    case OpKind::kAllreduce: return "allreduce";
    case OpKind::kAllgather: return "allgather";
    case OpKind::kBroadcast: return "broadcast";
    case OpKind::kAlltoall: return "alltoall";
    case OpKind::kReducescatter: return "reducescatter";
    case OpKind::kBarrier: return "barrier";
    case OpKind::kJoin: return "join";
  }
  return "invalid op";
}

}  // namespace kolo
