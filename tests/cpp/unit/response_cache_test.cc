#include <gtest/gtest.h>

#include "engine/response_cache.h"

namespace kolo {
namespace {

Response allreduce(const std::string& name, std::vector<int64_t> shape) {
  Response r;
  r.name = name;
  r.kind = OpKind::kAllreduce;
  r.dtype = DataType::kFloat32;
  r.reduce_op = ReduceOp::kAverage;
  r.shape = std::move(shape);
  return r;
}

Request request_for(const Response& r, int rank = 0) {
  Request q;
  q.name = r.name;
  q.rank = rank;
  q.kind = r.kind;
  q.dtype = r.dtype;
  q.device = r.device;
  q.reduce_op = r.reduce_op;
  q.prescale = r.prescale;
  q.postscale = r.postscale;
  q.root = r.root;
  q.shape = r.shape;
  return q;
}

TEST(ResponseCache, HitMissAndChanged) {
  ResponseCache cache(4);
  std::string evicted;
  const uint32_t pos = cache.put(allreduce("a", {3}), &evicted);
  EXPECT_EQ(pos, 0u);
  EXPECT_EQ(evicted, "");
  uint32_t found = 99;
  EXPECT_EQ(cache.lookup(request_for(allreduce("a", {3})), &found), ResponseCache::Lookup::kHit);
  EXPECT_EQ(found, 0u);
  EXPECT_EQ(cache.lookup(request_for(allreduce("b", {3})), &found), ResponseCache::Lookup::kMiss);
  EXPECT_EQ(cache.lookup(request_for(allreduce("a", {4})), &found), ResponseCache::Lookup::kChanged);
  Request other_op = request_for(allreduce("a", {3}));
  other_op.reduce_op = ReduceOp::kSum;
  EXPECT_EQ(cache.lookup(other_op, &found), ResponseCache::Lookup::kChanged);
}

TEST(ResponseCache, EvictsLeastRecentlyUsedAndReusesItsPosition) {
  ResponseCache cache(3);
  std::string evicted;
  cache.put(allreduce("a", {1}), &evicted);
  cache.put(allreduce("b", {1}), &evicted);
  cache.put(allreduce("c", {1}), &evicted);
  cache.touch(0);  // a is now the most recent; b the least
  EXPECT_EQ(cache.put(allreduce("d", {1}), &evicted), 1u);
  EXPECT_EQ(evicted, "b");
  EXPECT_EQ(cache.get(1).name, "d");
  EXPECT_EQ(cache.num_positions(), 3u);
  uint32_t found;
  EXPECT_EQ(cache.lookup(request_for(allreduce("b", {1})), &found), ResponseCache::Lookup::kMiss);
}

TEST(ResponseCache, ErasedPositionsAreReusedLowestFirst) {
  ResponseCache cache(8);
  std::string evicted;
  for (const char* n : {"a", "b", "c", "d"}) cache.put(allreduce(n, {1}), &evicted);
  cache.erase(2);
  cache.erase(1);
  EXPECT_FALSE(cache.contains(1));
  EXPECT_EQ(cache.put(allreduce("e", {1}), &evicted), 1u);
  EXPECT_EQ(cache.put(allreduce("f", {1}), &evicted), 2u);
  EXPECT_EQ(cache.put(allreduce("g", {1}), &evicted), 4u);
  EXPECT_EQ(cache.size(), 5u);
}

TEST(ResponseCache, AllgatherMatchesOnThisRanksRows) {
  Response r;
  r.name = "g";
  r.kind = OpKind::kAllgather;
  r.shape = {5, 2};
  r.first_dims = {2, 3};
  ResponseCache cache(2);
  std::string evicted;
  cache.put(r, &evicted);
  Request q;
  q.name = "g";
  q.kind = OpKind::kAllgather;
  q.rank = 1;
  q.shape = {3, 2};
  uint32_t pos;
  EXPECT_EQ(cache.lookup(q, &pos), ResponseCache::Lookup::kHit);
  q.shape = {2, 2};  // rank 1 now sends 2 rows: the others must learn it
  EXPECT_EQ(cache.lookup(q, &pos), ResponseCache::Lookup::kChanged);
}

}  // namespace
}  // namespace kolo
