#include "comm/segment_plan.h"

#include <algorithm>
#include <climits>

namespace kolo {

SegmentPlan plan_segments(const std::vector<int64_t>& member_bytes, int64_t element_size,
                          int64_t segment_bytes, int64_t zero_copy_bytes, bool in_place) {
  // Whole elements per segment, and never more than an int count of them (MPI's limit).
  int64_t max_bytes = static_cast<int64_t>(INT_MAX) * element_size;
  if (segment_bytes > 0) max_bytes = std::min(max_bytes, std::max(segment_bytes / element_size, int64_t{1}) * element_size);

  SegmentPlan plan;
  Segment pack;
  auto flush = [&] {
    if (pack.pieces.empty()) return;
    plan.staging_bytes = std::max(plan.staging_bytes, pack.bytes);
    plan.segments.push_back(std::move(pack));
    pack = Segment();
  };
  const bool single = member_bytes.size() == 1;
  for (size_t m = 0; m < member_bytes.size(); ++m) {
    const int64_t bytes = member_bytes[m];
    const bool direct = in_place && (single || (zero_copy_bytes > 0 && bytes >= zero_copy_bytes));
    if (direct) {
      // Direct segments do not break the packing of the small tensors around them: the pack is
      // flushed only when full, so small tensors on both sides of a large one share segments.
      for (int64_t off = 0; off < bytes; off += max_bytes) {
        Segment d;
        d.direct = true;
        d.bytes = std::min(max_bytes, bytes - off);
        d.pieces.push_back(SegmentPiece{m, off, d.bytes, 0});
        plan.segments.push_back(std::move(d));
      }
      continue;
    }
    for (int64_t off = 0; off < bytes;) {
      const int64_t take = std::min(bytes - off, max_bytes - pack.bytes);
      pack.pieces.push_back(SegmentPiece{m, off, take, pack.bytes});
      pack.bytes += take;
      off += take;
      if (pack.bytes == max_bytes) flush();
    }
  }
  flush();
  return plan;
}

}  // namespace kolo
