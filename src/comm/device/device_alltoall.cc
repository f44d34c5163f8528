// Alltoall of GPU tensors with per-rank split sizes: the split sizes are exchanged on the host over
// the instance's data group (the output's shape depends on them), then the rows move as point-to-point
// sends and receives, launched together.
#include "comm/device/device_collective.h"
#include "comm/device/device_collectives.h"

namespace kolo {
namespace {

class DeviceAlltoall : public DeviceCollective {
 public:
  explicit DeviceAlltoall(DeviceContext& context) : DeviceCollective(context, OpKind::kAlltoall, "ALLTOALL") {}
  // Its split sizes go through a collective of the data group that may block (MPI's): kolo's thread only.
  bool gives_up_on_lost_peer(int64_t) const override { return false; }

 protected:
  Status enqueue(CollectiveCall& call, DeviceWork& work) override {
    Piece& p = call.pieces[0];
    const int size = context_.context().topology().size;
    std::vector<int64_t> received(static_cast<size_t>(size));
    const std::vector<int64_t> ones(static_cast<size_t>(size), 1);
    Status sizes = context_.context().data().alltoallv(p.splits.data(), ones, received.data(), ones, sizeof(int64_t),
                                                       "alltoall's split sizes");
    if (!sizes.ok()) return sizes;
    std::vector<int64_t> shape = p.shape;
    shape[0] = 0;
    for (int64_t n : received) shape[0] += n;
    Status s = call.allocate(0, shape, context_.own_memory(), &p.out);
    if (!s.ok()) return s;
    call.received_splits = received;
    int64_t row_bytes = static_cast<int64_t>(dtype_size(call.dtype));
    for (size_t i = 1; i < shape.size(); ++i) row_bytes *= shape[i];
    if (row_bytes == 0) return Status::OK();
    DeviceComm* world = nullptr;
    s = comm(DeviceContext::Group::kWorld, work, &world);
    if (!s.ok()) return s;
    const DeviceStream stream = context_.stream();
    const char* in = static_cast<const char*>(p.in);
    char* out = static_cast<char*>(p.out);
    s = world->group_start();
    int64_t sent = 0, got = 0;
    for (int r = 0; r < size && s.ok(); ++r) {
      const int64_t send_bytes = p.splits[static_cast<size_t>(r)] * row_bytes;
      const int64_t recv_bytes = received[static_cast<size_t>(r)] * row_bytes;
      if (send_bytes > 0) s = world->send(in + sent, send_bytes, r, stream);
      if (s.ok() && recv_bytes > 0) s = world->recv(out + got, recv_bytes, r, stream);
      sent += send_bytes;
      got += recv_bytes;
    }
    Status end = world->group_end();
    if (s.ok()) s = end;
    if (s.ok()) s = work.mark(Phase::kCollective);
    return s;
  }
};

}  // namespace

std::unique_ptr<Collective> make_device_alltoall(DeviceContext& context) {
  return std::make_unique<DeviceAlltoall>(context);
}

}  // namespace kolo
