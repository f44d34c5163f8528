// How a fused CPU allreduce is cut into MPI calls. Two measured facts shape it (docs/architecture.md,
// "Segments"; figures in benchmarks/README.md): Open MPI reduces a 100 MB buffer about 3x slower in
// one call than in 4 MiB calls, which stay in cache; and copying a large tensor into a fusion buffer
// and back costs more than the extra call it saves. So the fused bytes are walked in segments of at
// most `segment_bytes`: a large tensor is reduced where it lies ("direct"), small ones are packed
// together ("packed").
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace kolo {

struct SegmentPiece {
  size_t member;           // which tensor of the group
  int64_t offset;          // bytes into that tensor
  int64_t bytes;
  int64_t staging_offset;  // bytes into the staging buffer (packed segments)
};

struct Segment {
  bool direct = false;     // one piece, reduced in the tensor's own memory
  std::vector<SegmentPiece> pieces;
  int64_t bytes = 0;
};

struct SegmentPlan {
  std::vector<Segment> segments;
  int64_t staging_bytes = 0;  // the largest packed segment
};

// `segment_bytes` 0: no limit but MPI's int element count. `zero_copy_bytes` 0: pack every tensor
// of a group of several. A group of one tensor is reduced in place, unless `in_place` is false
// (compressed data travels in another type, so everything is packed).
SegmentPlan plan_segments(const std::vector<int64_t>& member_bytes, int64_t element_size,
                          int64_t segment_bytes, int64_t zero_copy_bytes, bool in_place = true);

}  // namespace kolo
