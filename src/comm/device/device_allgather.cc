// Allgather of GPU tensors whose first dimension may differ per rank (gather_rows.h).
#include "comm/device/device_collective.h"
#include "comm/device/device_collectives.h"
#include "comm/device/gather_rows.h"

namespace kolo {
namespace {

class DeviceAllgather : public DeviceCollective {
 public:
  explicit DeviceAllgather(DeviceContext& context) : DeviceCollective(context, OpKind::kAllgather, "ALLGATHER") {}

 protected:
  Status enqueue(CollectiveCall& call, DeviceWork& work) override {
    Piece& p = call.pieces[0];
    Status s = call.allocate(0, call.shape, context_.own_memory(), &p.out);
    if (!s.ok() || call.size_bytes() == 0) return s;
    const int64_t row_bytes = call.size_bytes() / call.shape[0];
    std::vector<int64_t> bytes;
    for (int64_t rows : call.first_dims) bytes.push_back(rows * row_bytes);
    DeviceComm* world = nullptr;
    s = comm(DeviceContext::Group::kWorld, work, &world);
    if (s.ok()) s = gather_rows(*world, p.in, static_cast<char*>(p.out), bytes, context_.stream());
    if (s.ok()) s = work.mark(Phase::kCollective);
    return s;
  }
};

}  // namespace

std::unique_ptr<Collective> make_device_allgather(DeviceContext& context) {
  return std::make_unique<DeviceAllgather>(context);
}

}  // namespace kolo
