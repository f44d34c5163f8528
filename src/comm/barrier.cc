#include "comm/barrier.h"

namespace kolo {
namespace {

class NegotiatedBarrier : public Collective {
 public:
  const char* name() const override { return "NEGOTIATED"; }
  bool accepts(const Response& r) const override { return r.kind == OpKind::kBarrier || r.kind == OpKind::kJoin; }
  Status run(const std::vector<Task>& tasks, PhaseLog&) override {
    for (const Task& t : tasks) {
      if (t.response->kind == OpKind::kJoin) t.entry->result.last_joined_rank = t.response->root;
    }
    return Status::OK();
  }
};

}  // namespace

std::unique_ptr<Collective> make_negotiated_barrier() { return std::make_unique<NegotiatedBarrier>(); }

}  // namespace kolo
