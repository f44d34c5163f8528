// Reducescatter of GPU tensors: rank r keeps its block of rows (reducescatter_rows: lower ranks
// take one more when the rows do not divide). The device library wants blocks of one size, so
// uneven blocks (or a prescale, or int16 reduced as int32) go through the fusion buffer, each
// padded to the largest.
#include "comm/device/device_collective.h"
#include "comm/device/device_collectives.h"
#include "cpu/kernels.h"

namespace kolo {
namespace {

class DeviceReducescatter : public DeviceCollective {
 public:
  explicit DeviceReducescatter(DeviceContext& context)
      : DeviceCollective(context, OpKind::kReducescatter, "REDUCE_SCATTER") {}

 protected:
  Status enqueue(CollectiveCall& call, DeviceWork& work) override {
    const Piece& p = call.pieces[0];
    const DataType d = call.dtype;
    const DataType w = reduced_as(call);
    const int64_t in_elem = static_cast<int64_t>(dtype_size(d));
    const int64_t elem = static_cast<int64_t>(dtype_size(w));  // in the buffer
    const int size = context_.context().topology().size;
    const int me = context_.context().topology().rank;
    int64_t row_elems = 1;
    for (size_t i = 1; i < call.shape.size(); ++i) row_elems *= call.shape[i];
    std::vector<int64_t> block(static_cast<size_t>(size)), first(static_cast<size_t>(size));
    int64_t at = 0;
    for (int r = 0; r < size; ++r) {
      block[static_cast<size_t>(r)] = reducescatter_rows(call.shape[0], r, size) * row_elems;
      first[static_cast<size_t>(r)] = at;
      at += block[static_cast<size_t>(r)];
    }
    const int64_t widest = block[0];
    const bool even = call.shape[0] % size == 0;
    const Scaling post = post_scaling(d, call.reduce_op, call.postscale, size);
    const CopyTransform pre{d, w, call.prescale, 1, call.reduce_op};
    const CopyTransform after{w, d, post.factor, post.divisor, call.reduce_op};
    const ReduceOp op = library_op(d, call.reduce_op);
    DeviceBackend& b = context_.backend();
    const DeviceStream stream = context_.stream();
    if (widest == 0) return Status::OK();
    DeviceComm* world = nullptr;
    Status s = comm(DeviceContext::Group::kWorld, work, &world);
    if (!s.ok()) return s;
    if (even && pre.scale == 1.0 && w == d) {
      s = world->reducescatter(p.in, p.out, widest, d, op, stream);
      if (s.ok()) s = work.mark(Phase::kCollective);
      if (s.ok() && !(after.scale == 1.0 && after.divisor == 1)) {
        s = b.batched_copy({CopyPiece{p.out, p.out, widest}}, after, stream);
        if (s.ok()) s = work.mark(Phase::kUnpack);
      }
      return s;
    }
    std::shared_ptr<void> buffer;
    s = context_.fusion_buffer(widest * size * elem, &buffer);
    if (!s.ok()) return s;
    work.keep(buffer);
    char* base = static_cast<char*>(buffer.get());
    std::vector<CopyPiece> pack;
    for (int r = 0; r < size; ++r) {
      pack.push_back(CopyPiece{static_cast<const char*>(p.in) + first[static_cast<size_t>(r)] * in_elem,
                               base + r * widest * elem, block[static_cast<size_t>(r)]});
    }
    char* mine = base + me * widest * elem;
    s = b.batched_copy(pack, pre, stream);
    if (s.ok()) s = work.mark(Phase::kPack);
    if (s.ok()) s = world->reducescatter(base, mine, widest, w, op, stream);
    if (s.ok()) s = work.mark(Phase::kCollective);
    if (s.ok()) s = b.batched_copy({CopyPiece{mine, p.out, block[static_cast<size_t>(me)]}}, after, stream);
    if (s.ok()) s = work.mark(Phase::kUnpack);
    return s;
  }
};

}  // namespace

std::unique_ptr<Collective> make_device_reducescatter(DeviceContext& context) {
  return std::make_unique<DeviceReducescatter>(context);
}

}  // namespace kolo
