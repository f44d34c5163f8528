// Adasum of GPU tensors, staged through host memory: after the tensors' producers (ready events),
// the pieces are copied to the host, combined there by the host Adasum (the same algorithm, so GPU
// and CPU tensors give the same result), and copied back; the op is done when the copies back are.
// Adasum's steps need every level's dot products before the next exchange, which NCCL's fused
// collectives cannot express; Horovod's builds without NCCL stage the same way (its NCCL builds sum
// inside each host first, which changes the combination, so kolo does not).
#include <memory>
#include <vector>

#include "comm/device/device_collectives.h"
#include "comm/host/host_collectives.h"
#include "common/clock.h"

namespace kolo {
namespace {

class DeviceAdasum : public Collective {
 public:
  explicit DeviceAdasum(DeviceContext& context)
      : context_(context), host_(make_host_adasum(context.context())), name_(context.library() + "_ADASUM_VIA_HOST") {}

  const char* name() const override { return name_.c_str(); }
  bool accepts(OpKind kind, DeviceType device) const override {
    return kind == OpKind::kAllreduce && device == DeviceType::kCUDA;
  }
  bool accepts_reduction(ReduceOp op) const override { return op == ReduceOp::kAdasum; }

  Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>*) override {
    Status s = context_.ensure(call.device, call.name());
    if (s.ok()) s = prepare_joined_pieces(call, context_.own_memory(), context_.fill_identity());
    if (s.ok()) s = context_.wait_ready(call);
    if (!s.ok()) return s;
    DeviceBackend& backend = context_.backend();
    const DeviceStream stream = context_.stream();

    const double t0 = steady_seconds();
    std::vector<std::vector<char>> staged(call.pieces.size());
    for (size_t i = 0; i < call.pieces.size(); ++i) {
      const Piece& p = call.pieces[i];
      staged[i].resize(static_cast<size_t>(p.bytes) + 1);  // +1: a valid pointer when empty
      if (p.bytes > 0) s = backend.copy(staged[i].data(), p.in, p.bytes, stream);
      if (!s.ok()) return s;
    }
    s = finish_copies();
    if (!s.ok()) return s;

    CollectiveCall host = call;
    host.device = Device{};
    for (size_t i = 0; i < host.pieces.size(); ++i) {
      Piece& p = host.pieces[i];
      p.in = p.out = staged[i].data();
      p.joined = false;  // its stand-in (zeros) is staged like any tensor
      p.ready = nullptr;
    }
    const double t1 = steady_seconds();
    PhaseLog host_log(call.pieces.size(), false);
    s = host_->run(host, host_log, nullptr);
    if (!s.ok()) return s;
    const double t2 = steady_seconds();

    for (size_t i = 0; i < call.pieces.size(); ++i) {
      const Piece& p = call.pieces[i];
      if (p.bytes > 0) s = backend.copy(p.out, staged[i].data(), p.bytes, stream);
      if (!s.ok()) return s;
    }
    s = finish_copies();
    if (s.ok() && log.enabled()) {
      log.record_all(Phase::kPack, t0, t1);
      log.record_all(Phase::kCollective, t1, t2);
      log.record_all(Phase::kUnpack, t2, steady_seconds());
    }
    return s;
  }

 private:
  // The host waits for the copies queued on the communication stream.
  Status finish_copies() {
    PooledEvent done;
    Status s = context_.event(false, &done);
    if (s.ok()) s = context_.backend().record(done.get(), context_.stream());
    if (s.ok()) s = context_.backend().synchronize(done.get());
    return s;
  }

  DeviceContext& context_;
  std::unique_ptr<Collective> host_;
  const std::string name_;
};

}  // namespace

std::unique_ptr<Collective> make_device_adasum(DeviceContext& context) {
  return std::make_unique<DeviceAdasum>(context);
}

}  // namespace kolo
