#include "comm/hierarchy_choice.h"

namespace kolo {
namespace {

class HierarchyChoice : public Collective {
 public:
  HierarchyChoice(std::unique_ptr<Collective> flat, std::unique_ptr<Collective> hierarchical, bool start_hierarchical)
      : flat_(std::move(flat)), hierarchical_(std::move(hierarchical)), use_hierarchical_(start_hierarchical) {}

  const char* name() const override { return chosen().name(); }
  bool accepts(OpKind kind, DeviceType device) const override { return flat_->accepts(kind, device); }
  bool accepts_reduction(ReduceOp op) const override { return flat_->accepts_reduction(op); }
  Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>* pending) override {
    return chosen().run(call, log, pending);
  }
  bool gives_up_on_lost_peer(int64_t bytes) const override { return chosen().gives_up_on_lost_peer(bytes); }
  void tune(const CollectiveTuning& tuning) override {
    use_hierarchical_ = tuning.hierarchical;
    flat_->tune(tuning);
    hierarchical_->tune(tuning);
  }

 private:
  Collective& chosen() const { return use_hierarchical_ ? *hierarchical_ : *flat_; }

  std::unique_ptr<Collective> flat_, hierarchical_;
  bool use_hierarchical_;
};

}  // namespace

std::unique_ptr<Collective> make_hierarchy_choice(std::unique_ptr<Collective> flat,
                                                  std::unique_ptr<Collective> hierarchical, bool start_hierarchical) {
  return std::make_unique<HierarchyChoice>(std::move(flat), std::move(hierarchical), start_hierarchical);
}

}  // namespace kolo
