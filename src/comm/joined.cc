#include "comm/joined.h"

#include "cpu/host_memory.h"
#include "cpu/kernels.h"

namespace kolo {

Status prepare_joined_pieces(CollectiveCall& call, const OwnMemory& own, const FillIdentity& fill) {
  for (size_t i = 0; i < call.pieces.size(); ++i) {
    Piece& p = call.pieces[i];
    if (!p.joined) continue;
    if (call.kind != OpKind::kAllreduce && call.kind != OpKind::kBroadcast) continue;
    void* data = nullptr;
    Status s = call.allocate(i, p.shape, own, &data);
    if (!s.ok()) return s;
    p.in = data;
    p.out = data;
    if (call.kind == OpKind::kAllreduce) {
      s = fill(call.dtype, call.reduce_op, data, num_elements(p.shape));
      if (!s.ok()) return s;
    }
  }
  return Status::OK();
}

}  // namespace kolo

namespace kolo {

Status prepare_host_joined_pieces(CollectiveCall& call) {
  return prepare_joined_pieces(call, host_memory, [](DataType dtype, ReduceOp op, void* data, int64_t count) {
    fill_identity(dtype, op, data, count);
    return Status::OK();
  });
}

}  // namespace kolo
