// Allgather of GPU tensors whose first dimension may differ per rank (gather_rows.h).
#include "comm/device/device_collectives.h"
#include "comm/device/device_work.h"
#include "comm/device/gather_rows.h"

namespace kolo {

namespace {

class DeviceAllgather : public Collective {
 public:
  explicit DeviceAllgather(DeviceContext& context) : context_(context), name_(context.library() + "_ALLGATHER") {}
  const char* name() const override { return name_.c_str(); }
  bool accepts(OpKind kind, DeviceType device) const override {
    return kind == OpKind::kAllgather && device == DeviceType::kCUDA;
  }

  Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>* pending) override {
    return run_on_device(context_, call, log, pending, [&](DeviceWork& work) {
      Piece& p = call.pieces[0];
      Status s = call.allocate(0, call.shape, context_.own_memory(), &p.out);
      if (!s.ok() || call.size_bytes() == 0) return s;
      const int64_t row_bytes = call.size_bytes() / call.shape[0];
      std::vector<int64_t> bytes;
      for (int64_t rows : call.first_dims) bytes.push_back(rows * row_bytes);
      DeviceComm* world = nullptr;
      s = context_.comm(DeviceContext::Group::kWorld, &world);
      if (!s.ok()) return s;
      work.uses(world);
      s = gather_rows(*world, p.in, static_cast<char*>(p.out), bytes, context_.stream());
      if (s.ok()) s = work.mark(Phase::kCollective);
      return s;
    });
  }

 private:
  DeviceContext& context_;
  const std::string name_;
};

}  // namespace

std::unique_ptr<Collective> make_device_allgather(DeviceContext& context) {
  return std::make_unique<DeviceAllgather>(context);
}

}  // namespace kolo
