#include "comm/barrier.h"

namespace kolo {
namespace {

class NegotiatedBarrier : public Collective {
 public:
  const char* name() const override { return "BARRIER"; }
  bool accepts(const Response& r) const override { return r.kind == OpKind::kBarrier; }
  Status run(const std::vector<Task>&, PhaseLog&) override { return Status::OK(); }
};

}  // namespace

std::unique_ptr<Collective> make_negotiated_barrier() { return std::make_unique<NegotiatedBarrier>(); }

}  // namespace kolo
