#include "comm/barrier.h"

namespace kolo {
namespace {

class NegotiatedBarrier : public Collective {
 public:
  const char* name() const override { return "NEGOTIATED"; }
  // On any device: there is no data to move.
  bool accepts(OpKind kind, DeviceType) const override { return kind == OpKind::kBarrier || kind == OpKind::kJoin; }
  Status run(CollectiveCall& call, PhaseLog&, std::unique_ptr<Completion>*) override {
    if (call.kind == OpKind::kJoin) call.last_joined_rank = call.root;
    return Status::OK();
  }
};

}  // namespace

std::unique_ptr<Collective> make_negotiated_barrier() { return std::make_unique<NegotiatedBarrier>(); }

}  // namespace kolo
