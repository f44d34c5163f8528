#include "comm/collective.h"

#include <algorithm>

namespace kolo {

const char* phase_name(Phase phase) {
  switch (phase) {
    case Phase::kPack: return "PACK";
    case Phase::kCollective: return "COLLECTIVE";
    case Phase::kUnpack: return "UNPACK";
  }
  return "?";
}

PhaseLog::PhaseLog(size_t pieces, bool enabled) : enabled_(enabled), pieces_(pieces) {
  if (enabled_) spans_.resize(pieces * kNumPhases);
}

void PhaseLog::record(size_t piece, Phase phase, double start, double end) {
  if (!enabled_) return;
  Span& s = spans_[piece * kNumPhases + static_cast<int>(phase)];
  if (!s.set) {
    s = Span{start, end, true};
    return;
  }
  s.start = std::min(s.start, start);
  s.end = std::max(s.end, end);
}

void PhaseLog::record_all(Phase phase, double start, double end) {
  for (size_t i = 0; i < pieces_; ++i) record(i, phase, start, end);
}

Collective* CollectiveRegistry::find(OpKind kind, DeviceType device, ReduceOp op) const {
  const bool reduces = kind == OpKind::kAllreduce || kind == OpKind::kReducescatter;
  for (const auto& c : all_) {
    if (c->accepts(kind, device) && (!reduces || c->accepts_reduction(op))) return c.get();
  }
  return nullptr;
}

void CollectiveRegistry::set_unsupported_reason(DeviceType device, std::string why) {
  if (device == DeviceType::kCUDA) no_gpu_reason_ = std::move(why);
}

std::string CollectiveRegistry::unsupported_reason(DeviceType device) const {
  if (device != DeviceType::kCUDA) return "no collective in this build runs it on the CPU";
  return no_gpu_reason_.empty() ? "this kolo has no GPU support" : no_gpu_reason_;
}

void CollectiveRegistry::tune(const CollectiveTuning& tuning) {
  for (auto& c : all_) c->tune(tuning);
}

}  // namespace kolo
