#include <gtest/gtest.h>

#include "engine/fusion_planner.h"

namespace kolo {
namespace {

Response ar(const std::string& name, int64_t elements, DataType dtype = DataType::kFloat32,
            ReduceOp op = ReduceOp::kAverage) {
  Response r;
  r.name = name;
  r.kind = OpKind::kAllreduce;
  r.dtype = dtype;
  r.reduce_op = op;
  r.shape = {elements};
  return r;
}

std::vector<std::vector<size_t>> members(const std::vector<FusionGroup>& groups) {
  std::vector<std::vector<size_t>> out;
  for (const auto& g : groups) out.push_back(g.members);
  return out;
}

using Groups = std::vector<std::vector<size_t>>;

TEST(FusionPlanner, FusesCompatibleAllreducesUpToTheThreshold) {
  // 100 floats = 400 bytes each; threshold 1000 bytes fits two.
  std::vector<Response> rs = {ar("a", 100), ar("b", 100), ar("c", 100), ar("d", 100), ar("e", 100)};
  EXPECT_EQ(members(plan_fusion(rs, 1000)), (Groups{{0, 1}, {2, 3}, {4}}));
  EXPECT_EQ(plan_fusion(rs, 1000)[0].bytes, 800);
}

TEST(FusionPlanner, KeepsDifferentDtypesOpsAndScalesApart) {
  Response scaled = ar("e", 10);
  scaled.postscale = 2.0;
  Response compressed = ar("g", 10);
  compressed.compression = Compression::kFloat16;
  std::vector<Response> rs = {ar("a", 10), ar("b", 10, DataType::kFloat64), ar("c", 10, DataType::kFloat32, ReduceOp::kSum),
                              ar("d", 10), scaled, ar("f", 10, DataType::kFloat64), compressed};
  EXPECT_EQ(members(plan_fusion(rs, 1 << 20)), (Groups{{0, 3}, {1, 5}, {2}, {4}, {6}}));
}

TEST(FusionPlanner, LargeTensorsGoAloneAndZeroTurnsFusionOff) {
  std::vector<Response> rs = {ar("a", 10), ar("big", 1000), ar("b", 10)};
  EXPECT_EQ(members(plan_fusion(rs, 400)), (Groups{{0, 2}, {1}}));
  EXPECT_EQ(members(plan_fusion(rs, 0)), (Groups{{0}, {1}, {2}}));
}

TEST(FusionPlanner, OtherOpsAndErrorsAreGroupsOfOne) {
  Response gather = ar("g", 10);
  gather.kind = OpKind::kAllgather;
  Response failed = ar("x", 10);
  failed.type = Response::Type::kError;
  std::vector<Response> rs = {ar("a", 10), gather, failed, ar("b", 10)};
  EXPECT_EQ(members(plan_fusion(rs, 1 << 20)), (Groups{{0, 3}, {1}, {2}}));
}

}  // namespace
}  // namespace kolo
