// Allreduce of GPU tensors, fused or alone, on the communication stream: wait for the producers'
// ready events, pack every tensor into the fusion buffer with one batched copy (prescale on the
// way, and the cast to 16 bits under compression), reduce, unpack with one batched copy (postscale,
// an Average's division, the cast back), record the done event. A lone tensor is reduced where it
// lies (unless compressed). Hierarchical: reduce-scatter inside the host,
// allreduce of each block across hosts among the ranks of one local rank, allgather inside the host.
#include <algorithm>

#include "comm/device/device_collective.h"
#include "comm/device/device_collectives.h"
#include "cpu/kernels.h"

namespace kolo {
namespace {

// Offsets of tensors in the fusion buffer are multiples of 16 bytes, so the batched copy's
// vector loads and stores line up.
constexpr int64_t kAlign = 16;

int64_t align_up(int64_t v, int64_t to) { return (v + to - 1) / to * to; }

class DeviceAllreduce : public DeviceCollective {
 public:
  DeviceAllreduce(DeviceContext& context, bool hierarchical)
      : DeviceCollective(context, OpKind::kAllreduce, hierarchical ? "HIERARCHICAL_ALLREDUCE" : "ALLREDUCE"),
        hierarchical_(hierarchical) {}

 protected:
  std::vector<DeviceContext::Group> groups() const override {
    if (!hierarchical_) return {DeviceContext::Group::kWorld};
    const Topology& t = context_.context().topology();
    std::vector<DeviceContext::Group> g;
    if (t.local_size > 1) g.push_back(DeviceContext::Group::kLocal);
    if (t.cross_size > 1) g.push_back(DeviceContext::Group::kCross);
    return g;
  }

  Status enqueue(CollectiveCall& call, DeviceWork& work) override {
    const bool packed = hierarchical_ || call.pieces.size() > 1 || reduced_as(call) != call.dtype;
    return packed ? fused(call, work) : alone(call, work);
  }

 private:
  struct Scalings {
    CopyTransform pre, post;
    ReduceOp op;
  };

  Scalings scalings_of(const CollectiveCall& call) const {
    const DataType d = call.dtype;
    const int contributors = call.contributors > 0 ? call.contributors : context_.context().topology().size;
    const Scaling post = post_scaling(d, call.reduce_op, call.postscale, contributors);
    Scalings s;
    const DataType w = reduced_as(call);
    s.pre = CopyTransform{d, w, call.prescale, 1, call.reduce_op};
    s.post = CopyTransform{w, d, post.factor, post.divisor, call.reduce_op};
    s.op = library_op(d, call.reduce_op);
    return s;
  }

  static bool identity(const CopyTransform& t) { return t.scale == 1.0 && t.divisor == 1; }

  Status alone(CollectiveCall& call, DeviceWork& work) {
    const Piece& p = call.pieces[0];
    const Scalings sc = scalings_of(call);
    const int64_t count = p.bytes / static_cast<int64_t>(dtype_size(call.dtype));
    DeviceBackend& b = context_.backend();
    const void* send = p.in;
    Status s;
    if (!identity(sc.pre)) {
      s = b.batched_copy({CopyPiece{p.in, p.out, count}}, sc.pre, context_.stream());
      send = p.out;
    }
    if (s.ok()) s = work.mark(Phase::kPack);
    if (!s.ok() || count == 0) return s;
    DeviceComm* world = nullptr;
    s = comm(DeviceContext::Group::kWorld, work, &world);
    if (s.ok()) s = world->allreduce(send, p.out, count, call.dtype, sc.op, context_.stream());
    if (s.ok()) s = work.mark(Phase::kCollective);
    if (s.ok() && !identity(sc.post)) s = b.batched_copy({CopyPiece{p.out, p.out, count}}, sc.post, context_.stream());
    if (s.ok()) s = work.mark(Phase::kUnpack);
    return s;
  }

  Status fused(CollectiveCall& call, DeviceWork& work) {
    const int64_t in_elem = static_cast<int64_t>(dtype_size(call.dtype));
    const DataType wire = reduced_as(call);
    const int64_t elem = static_cast<int64_t>(dtype_size(wire));  // in the buffer
    const Scalings sc = scalings_of(call);
    std::vector<CopyPiece> pack, unpack;
    pack.reserve(call.pieces.size());
    unpack.reserve(call.pieces.size());
    // Element offsets of each tensor in the buffer; the total padded so that it divides among the
    // ranks of a host for the hierarchical reduce-scatter.
    std::vector<int64_t> offsets;
    int64_t at = 0;
    for (const Piece& p : call.pieces) {
      offsets.push_back(at);
      at = align_up(at + p.bytes / in_elem, std::max<int64_t>(1, kAlign / elem));
    }
    const int local = hierarchical_ ? context_.context().topology().local_size : 1;
    const int64_t total = align_up(at, local);
    std::shared_ptr<void> buffer;
    Status s = context_.fusion_buffer(total * elem, &buffer);
    if (!s.ok()) return s;
    work.keep(buffer);
    char* base = static_cast<char*>(buffer.get());
    for (size_t i = 0; i < call.pieces.size(); ++i) {
      const Piece& p = call.pieces[i];
      const int64_t n = p.bytes / in_elem;
      pack.push_back(CopyPiece{p.in, base + offsets[i] * elem, n});
      unpack.push_back(CopyPiece{base + offsets[i] * elem, p.out, n});
    }
    DeviceBackend& b = context_.backend();
    s = b.batched_copy(pack, sc.pre, context_.stream());
    if (s.ok()) s = work.mark(Phase::kPack);
    if (s.ok()) s = hierarchical_ ? reduce_hierarchically(base, total, wire, sc.op, work)
                                  : reduce_flat(base, total, wire, sc.op, work);
    if (s.ok()) s = work.mark(Phase::kCollective);
    if (s.ok()) s = b.batched_copy(unpack, sc.post, context_.stream());
    if (s.ok()) s = work.mark(Phase::kUnpack);
    return s;
  }

  Status reduce_flat(char* buffer, int64_t count, DataType dtype, ReduceOp op, DeviceWork& work) {
    if (count == 0) return Status::OK();
    DeviceComm* world = nullptr;
    Status s = comm(DeviceContext::Group::kWorld, work, &world);
    return s.ok() ? world->allreduce(buffer, buffer, count, dtype, op, context_.stream()) : s;
  }

  // `count` divides by the local size. Each byte crosses between hosts once per host.
  Status reduce_hierarchically(char* buffer, int64_t count, DataType dtype, ReduceOp op, DeviceWork& work) {
    if (count == 0) return Status::OK();
    const Topology& t = context_.context().topology();
    const int64_t elem = static_cast<int64_t>(dtype_size(dtype));
    const int64_t block = count / t.local_size;
    char* mine = buffer + t.local_rank * block * elem;
    DeviceComm *local = nullptr, *cross = nullptr;
    Status s;
    if (t.local_size > 1) s = comm(DeviceContext::Group::kLocal, work, &local);
    if (s.ok() && t.cross_size > 1) s = comm(DeviceContext::Group::kCross, work, &cross);
    if (!s.ok()) return s;
    const DeviceStream stream = context_.stream();
    if (local != nullptr) s = local->reducescatter(buffer, mine, block, dtype, op, stream);
    if (s.ok() && cross != nullptr) s = cross->allreduce(mine, mine, block, dtype, op, stream);
    if (s.ok() && local != nullptr) s = local->allgather(mine, buffer, block, dtype, stream);
    return s;
  }

  const bool hierarchical_;
};

}  // namespace

std::unique_ptr<Collective> make_device_allreduce(DeviceContext& context) {
  return std::make_unique<DeviceAllreduce>(context, false);
}

std::unique_ptr<Collective> make_device_hierarchical_allreduce(DeviceContext& context) {
  return std::make_unique<DeviceAllreduce>(context, true);
}

}  // namespace kolo
