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

PhaseLog::PhaseLog(size_t tasks, bool enabled) : enabled_(enabled) {
  if (enabled_) spans_.resize(tasks * kNumPhases);
}

void PhaseLog::record(size_t task, Phase phase, double start, double end) {
  if (!enabled_) return;
  Span& s = spans_[task * kNumPhases + static_cast<int>(phase)];
  if (!s.set) {
    s = Span{start, end, true};
    return;
  }
  s.start = std::min(s.start, start);
  s.end = std::max(s.end, end);
}

Collective* CollectiveRegistry::find(const Response& response) const {
  for (const auto& c : all_) {
    if (c->accepts(response)) return c.get();
  }
  return nullptr;
}

}  // namespace kolo
