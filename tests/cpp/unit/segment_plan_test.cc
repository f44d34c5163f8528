#include <gtest/gtest.h>

#include <sstream>

#include "comm/segment_plan.h"

namespace kolo {
namespace {

// "D0:0+8" is a direct segment of member 0 from byte 0, 8 bytes; "P[1:0+4@0,2:0+4@4]" a packed one.
std::string describe(const SegmentPlan& plan) {
  std::ostringstream s;
  for (const Segment& seg : plan.segments) {
    if (seg.direct) {
      const SegmentPiece& p = seg.pieces[0];
      s << "D" << p.member << ":" << p.offset << "+" << p.bytes << " ";
      continue;
    }
    s << "P[";
    for (size_t i = 0; i < seg.pieces.size(); ++i) {
      const SegmentPiece& p = seg.pieces[i];
      s << (i ? "," : "") << p.member << ":" << p.offset << "+" << p.bytes << "@" << p.staging_offset;
    }
    s << "] ";
  }
  return s.str();
}

TEST(SegmentPlan, ASingleTensorIsReducedInPlaceInSegments) {
  SegmentPlan plan = plan_segments({40}, 4, 16, 1000);
  EXPECT_EQ(describe(plan), "D0:0+16 D0:16+16 D0:32+8 ");
  EXPECT_EQ(plan.staging_bytes, 0);
}

TEST(SegmentPlan, SmallTensorsArePackedLargeOnesGoDirect) {
  // zero copy from 32 bytes: members 1 and 3 are direct; 0, 2, 4 share packed segments.
  SegmentPlan plan = plan_segments({8, 40, 8, 32, 12}, 4, 16, 32);
  EXPECT_EQ(describe(plan), "D1:0+16 D1:16+16 D1:32+8 P[0:0+8@0,2:0+8@8] D3:0+16 D3:16+16 P[4:0+12@0] ");
  EXPECT_EQ(plan.staging_bytes, 16);
}

TEST(SegmentPlan, PackedTensorsMayStraddleSegments) {
  SegmentPlan plan = plan_segments({12, 12}, 4, 16, 0);
  EXPECT_EQ(describe(plan), "P[0:0+12@0,1:0+4@12] P[1:4+8@0] ");
}

TEST(SegmentPlan, SegmentsHoldWholeElementsAndEmptyTensorsNothing) {
  EXPECT_EQ(describe(plan_segments({24}, 8, 20, 0)), "D0:0+16 D0:16+8 ");
  EXPECT_EQ(describe(plan_segments({0, 8, 0}, 4, 16, 0)), "P[1:0+8@0] ");
  EXPECT_EQ(describe(plan_segments({0}, 4, 16, 0)), "");
}

TEST(SegmentPlan, NoSegmentLimitStillRespectsMpiIntCounts) {
  const int64_t huge = (int64_t{1} << 31) * 4 + 8;  // 2^31 + 2 float elements
  SegmentPlan plan = plan_segments({huge}, 4, 0, 0);
  ASSERT_EQ(plan.segments.size(), 2u);
  EXPECT_EQ(plan.segments[0].bytes, int64_t{2147483647} * 4);
  EXPECT_EQ(plan.segments[1].bytes, 12);
}

}  // namespace
}  // namespace kolo
