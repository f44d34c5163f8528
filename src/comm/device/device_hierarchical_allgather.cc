// Allgather of GPU tensors in three steps, so that each host's rows cross between hosts once:
// gather inside the host, exchange host blocks among each host's first rank, broadcast inside the
// host (the CPU path's algorithm, comm/host/hierarchical_allgather.cc, on the device).
#include "comm/device/device_collective.h"
#include "comm/device/device_collectives.h"
#include "comm/device/gather_rows.h"

namespace kolo {

namespace {

class DeviceHierarchicalAllgather : public DeviceCollective {
 public:
  explicit DeviceHierarchicalAllgather(DeviceContext& context)
      : DeviceCollective(context, OpKind::kAllgather, "HIERARCHICAL_ALLGATHER") {
    int next = 0;
    for (const auto& members : context.context().host_members()) {
      for (int r : members) in_world_order_ = in_world_order_ && r == next++;
    }
  }

 protected:
  Status enqueue(CollectiveCall& call, DeviceWork& work) override { return gather(call, work); }
  std::vector<DeviceContext::Group> groups() const override {
    const Topology& t = context_.context().topology();
    if (t.local_rank == 0 && t.cross_size > 1) return {DeviceContext::Group::kLocal, DeviceContext::Group::kCross};
    return {DeviceContext::Group::kLocal};
  }

 private:
  Status gather(CollectiveCall& call, DeviceWork& work) {
    Piece& p = call.pieces[0];
    Status s = call.allocate(0, call.shape, context_.own_memory(), &p.out);
    if (!s.ok() || call.size_bytes() == 0) return s;
    const int64_t row_bytes = call.size_bytes() / call.shape[0];
    const Topology& t = context_.context().topology();
    const auto& hosts = context_.context().host_members();
    const DeviceStream stream = context_.stream();

    // Bytes in gathered order: host by host, each host's ranks in local-rank order.
    std::vector<int64_t> local_bytes, host_bytes;
    int64_t before_my_host = 0;
    for (size_t h = 0; h < hosts.size(); ++h) {
      int64_t n = 0;
      for (int q : hosts[h]) n += call.first_dims[static_cast<size_t>(q)] * row_bytes;
      host_bytes.push_back(n);
      if (static_cast<int>(h) < t.cross_rank) before_my_host += n;
    }
    for (int q : hosts[static_cast<size_t>(t.cross_rank)]) local_bytes.push_back(call.first_dims[static_cast<size_t>(q)] * row_bytes);

    char* gathered = static_cast<char*>(p.out);
    if (!in_world_order_) {
      std::shared_ptr<void> scratch;
      s = context_.own_memory()(call.size_bytes(), &scratch);
      if (!s.ok()) return s;
      work.keep(scratch);
      gathered = static_cast<char*>(scratch.get());
    }
    DeviceComm *local = nullptr, *cross = nullptr;
    s = comm(DeviceContext::Group::kLocal, work, &local);
    if (s.ok() && t.local_rank == 0 && t.cross_size > 1) s = comm(DeviceContext::Group::kCross, work, &cross);
    if (!s.ok()) return s;
    s = gather_rows(*local, p.in, gathered + before_my_host, local_bytes, stream);
    if (s.ok() && cross != nullptr) s = gather_rows(*cross, gathered + before_my_host, gathered, host_bytes, stream);
    if (s.ok() && t.cross_size > 1) s = local->broadcast(gathered, gathered, call.size_bytes(), DataType::kUInt8, 0, stream);
    if (s.ok() && !in_world_order_) s = to_world_order(call, gathered, row_bytes);
    if (s.ok()) s = work.mark(Phase::kCollective);
    return s;
  }

  // Moves each rank's rows from gathered order to their place in world order, in one batched copy.
  Status to_world_order(const CollectiveCall& call, const char* gathered, int64_t row_bytes) {
    std::vector<int64_t> world_offset(call.first_dims.size() + 1, 0);
    for (size_t q = 0; q < call.first_dims.size(); ++q) world_offset[q + 1] = world_offset[q] + call.first_dims[q];
    std::vector<CopyPiece> moves;
    int64_t at = 0;
    for (const auto& members : context_.context().host_members()) {
      for (int q : members) {
        const int64_t rows = call.first_dims[static_cast<size_t>(q)];
        moves.push_back(CopyPiece{gathered + at * row_bytes,
                                  static_cast<char*>(call.pieces[0].out) + world_offset[static_cast<size_t>(q)] * row_bytes,
                                  rows * row_bytes});
        at += rows;
      }
    }
    return context_.backend().batched_copy(moves, CopyTransform{DataType::kUInt8, DataType::kUInt8, 1.0, 1, ReduceOp::kSum},
                                           context_.stream());
  }

  bool in_world_order_ = true;
};

}  // namespace

std::unique_ptr<Collective> make_device_hierarchical_allgather(DeviceContext& context) {
  return std::make_unique<DeviceHierarchicalAllgather>(context);
}

}  // namespace kolo
