// Which of a cycle's responses share one collective. Every rank plans from the same response list
// with the same rule, so every rank fuses identically without talking about it.
#pragma once

#include <cstdint>
#include <vector>

#include "engine/message.h"

namespace kolo {

struct FusionGroup {
  std::vector<size_t> members;  // indices into the response list, in list order
  int64_t bytes = 0;
};

// Allreduces of the same dtype, device, reduce op, scale factors and compression are fused in list order up to
// `threshold_bytes`; a larger tensor goes alone, and 0 turns fusion off. Everything else is a
// group of one. Groups come in the order of their first member.
std::vector<FusionGroup> plan_fusion(const std::vector<Response>& responses, int64_t threshold_bytes);

}  // namespace kolo
