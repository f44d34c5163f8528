// Broadcast of GPU tensors from any root.
#include "comm/device/device_collective.h"
#include "comm/device/device_collectives.h"

namespace kolo {
namespace {

class DeviceBroadcast : public DeviceCollective {
 public:
  explicit DeviceBroadcast(DeviceContext& context) : DeviceCollective(context, OpKind::kBroadcast, "BCAST") {}

 protected:
  Status enqueue(CollectiveCall& call, DeviceWork& work) override {
    if (call.size_bytes() == 0) return Status::OK();
    const Piece& p = call.pieces[0];
    DeviceComm* world = nullptr;
    Status s = comm(DeviceContext::Group::kWorld, work, &world);
    if (s.ok()) s = world->broadcast(p.in, p.out, call.size_bytes(), DataType::kUInt8, call.root, context_.stream());
    if (s.ok()) s = work.mark(Phase::kCollective);
    return s;
  }
};

}  // namespace

std::unique_ptr<Collective> make_device_broadcast(DeviceContext& context) {
  return std::make_unique<DeviceBroadcast>(context);
}

}  // namespace kolo
