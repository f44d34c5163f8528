// Small allreduces riding on the negotiation (engine/rider.h): the riders' reduction, and the
// controller's use of it with threads as ranks.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <vector>

#include "engine/controller.h"
#include "engine/rider.h"
#include "fake_channel.h"
#include "request_util.h"

namespace kolo {
namespace {

using testing::FakeChannel;
using testing::FakeWorld;
using testing::run_ranks;

constexpr size_t kData = 64;

Response sum_of(const std::string& name, DataType dtype, int64_t n, ReduceOp op = ReduceOp::kSum) {
  Response r;
  r.name = name;
  r.dtype = dtype;
  r.reduce_op = op;
  r.shape = {n};
  return r;
}

TensorEntry entry_over(std::vector<float>* data) {
  TensorEntry e;
  e.input = cpu_view(*data);
  e.output = e.input;
  return e;
}

// A rider loaded in place over one that carried other bytes (a cycle reuses its rider).
std::string loaded(uint32_t position, const Response& r, const TensorEntry& e) {
  std::string rider(rider_bytes(kData), '\x7f');
  load_rider(position, r, e, &rider);
  return rider;
}

std::vector<float> floats_of(const std::string& rider, size_t n) {
  uint32_t position = 0;
  const char* data = nullptr;
  EXPECT_TRUE(rider_result(rider, &position, &data));
  std::vector<float> out(n);
  std::memcpy(out.data(), data, n * sizeof(float));
  return out;
}

TEST(Rider, WhatMayRide) {
  EXPECT_TRUE(can_ride(sum_of("a", DataType::kFloat32, 16), kData));
  EXPECT_FALSE(can_ride(sum_of("a", DataType::kFloat32, 17), kData));  // 68 bytes
  EXPECT_TRUE(can_ride(sum_of("a", DataType::kInt64, 8, ReduceOp::kAverage), kData));
  EXPECT_FALSE(can_ride(sum_of("a", DataType::kFloat16, 1), kData));
  EXPECT_FALSE(can_ride(sum_of("a", DataType::kFloat32, 1, ReduceOp::kAdasum), kData));
  Response gather = sum_of("a", DataType::kFloat32, 1);
  gather.kind = OpKind::kAllgather;
  EXPECT_FALSE(can_ride(gather, kData));
  Response gpu = sum_of("a", DataType::kFloat32, 1);
  gpu.device = DeviceType::kCUDA;
  EXPECT_FALSE(can_ride(gpu, kData));
}

TEST(Rider, RidersOfTheSameOpReduceInAnyOrderOthersMix) {
  std::vector<float> a = {1, 2}, b = {30, 40}, c = {500, 600};
  const Response r = sum_of("s", DataType::kFloat32, 2);
  TensorEntry ea = entry_over(&a), eb = entry_over(&b), ec = entry_over(&c);
  std::string x = loaded(3, r, ea), y = loaded(3, r, eb), z = loaded(3, r, ec);
  std::string xy = x;
  combine_riders(y.data(), &xy[0], xy.size());
  combine_riders(z.data(), &xy[0], xy.size());
  std::string zy = z;
  combine_riders(y.data(), &zy[0], zy.size());
  combine_riders(x.data(), &zy[0], zy.size());
  EXPECT_EQ(floats_of(xy, 2), (std::vector<float>{531, 642}));
  EXPECT_EQ(floats_of(zy, 2), (std::vector<float>{531, 642}));

  uint32_t position = 0;
  const char* data = nullptr;
  std::string other = loaded(4, r, eb), empty = empty_rider(kData);
  std::string mixed = x;
  combine_riders(other.data(), &mixed[0], mixed.size());  // another op
  EXPECT_FALSE(rider_result(mixed, &position, &data));
  mixed = x;
  combine_riders(empty.data(), &mixed[0], mixed.size());  // a rank carrying nothing
  EXPECT_FALSE(rider_result(mixed, &position, &data));
  combine_riders(x.data(), &empty[0], empty.size());
  EXPECT_FALSE(rider_result(empty, &position, &data));
  // Mixed stays mixed, whatever comes after.
  combine_riders(x.data(), &mixed[0], mixed.size());
  EXPECT_FALSE(rider_result(mixed, &position, &data));
}

TEST(Rider, AReusedRiderCarriesNothingOfItsLastUse) {
  std::vector<float> a = {1, 2};
  const Response r = sum_of("s", DataType::kFloat32, 2);
  const TensorEntry e = entry_over(&a);
  std::string expected = empty_rider(kData);
  load_rider(3, r, e, &expected);
  EXPECT_EQ(loaded(3, r, e), expected);  // the bytes after the data are zero, as on a fresh rider
  std::string cleared = loaded(3, r, e);
  clear_rider(&cleared);
  EXPECT_EQ(cleared, empty_rider(kData));
  uint32_t position = 0;
  const char* data = nullptr;
  EXPECT_FALSE(rider_result(cleared, &position, &data));
}

Request req(int rank, const std::string& name, int64_t n) { return testing::allreduce_request(rank, name, {n}); }

// 3 ranks; cycle 0 caches "a" and "s" (each rank's values: rank + 1). At cycle 2 every rank submits
// "s"; rank 0 also "a" if `rank0_also_a`, which it then carries instead (it comes first in the cache).
std::vector<CycleResult> third_cycle(bool rank0_also_a) {
  FakeWorld world(3);
  std::vector<CycleResult> third(3);
  run_ranks(3, [&](int rank) {
    FakeChannel channel(&world, rank);
    Controller controller(&channel, Config());
    std::map<std::string, std::vector<float>> data = {{"a", {rank + 1.0f}}, {"s", {rank + 1.0f, 10.0f * (rank + 1)}}};
    std::map<std::string, TensorEntry> entries;
    for (auto& kv : data) entries[kv.first] = entry_over(&kv.second);
    RiderLoader load = [&](uint32_t position, const Response& r, std::string* rider) {
      load_rider(position, r, entries.at(r.name), rider);
      return true;
    };
    for (int c = 0; c < 3; ++c) {
      std::vector<Request> q;
      if (c == 0) q = {req(rank, "a", 1), req(rank, "s", 2)};
      if (c == 2) q = {req(rank, "s", 2)};
      if (c == 2 && rank == 0 && rank0_also_a) q.insert(q.begin(), req(rank, "a", 1));
      CycleResult r;
      ASSERT_TRUE(controller.cycle(q, false, &r, load).ok());
      if (c == 2) third[rank] = r;
    }
  });
  return third;
}

TEST(Rider, TheSameSmallOpReadyEverywhereIsDoneByTheNegotiation) {
  for (const CycleResult& r : third_cycle(false)) {
    ASSERT_TRUE(r.ridden);
    EXPECT_EQ(r.ridden_response.name, "s");
    EXPECT_TRUE(r.responses.empty());
    EXPECT_EQ(floats_of(r.rider, 2), (std::vector<float>{6, 60}));
  }
}

TEST(Rider, RanksCarryingDifferentOpsRunTheOpTheUsualWay) {
  for (const CycleResult& r : third_cycle(true)) {
    EXPECT_FALSE(r.ridden);
    ASSERT_EQ(r.responses.size(), 1u);
    EXPECT_EQ(r.responses[0].name, "s");
  }
}

}  // namespace
}  // namespace kolo
