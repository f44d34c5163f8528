// Broadcast of GPU tensors from any root.
#include "comm/device/device_collectives.h"
#include "comm/device/device_work.h"

namespace kolo {
namespace {

class DeviceBroadcast : public Collective {
 public:
  explicit DeviceBroadcast(DeviceContext& context) : context_(context), name_(context.library() + "_BCAST") {}
  const char* name() const override { return name_.c_str(); }
  bool accepts(OpKind kind, DeviceType device) const override {
    return kind == OpKind::kBroadcast && device == DeviceType::kCUDA;
  }

  Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>* pending) override {
    return run_on_device(context_, call, log, pending, [&](DeviceWork& work) {
      const Piece& p = call.pieces[0];
      DeviceComm* world = nullptr;
      Status s = context_.comm(DeviceContext::Group::kWorld, &world);
      if (!s.ok() || call.size_bytes() == 0) return s;
      work.uses(world);
      s = world->broadcast(p.in, p.out, call.size_bytes(), DataType::kUInt8, call.root, context_.stream());
      if (s.ok()) s = work.mark(Phase::kCollective);
      return s;
    });
  }

 private:
  DeviceContext& context_;
  const std::string name_;
};

}  // namespace

std::unique_ptr<Collective> make_device_broadcast(DeviceContext& context) {
  return std::make_unique<DeviceBroadcast>(context);
}

}  // namespace kolo
