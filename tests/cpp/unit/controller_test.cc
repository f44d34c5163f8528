// Negotiation with threads as ranks: every rank must get the same responses in the same order.
#include <gtest/gtest.h>

#include <atomic>
#include <map>

#include "engine/controller.h"
#include "fake_channel.h"
#include "request_util.h"

namespace kolo {
namespace {

using testing::FakeChannel;
using testing::FakeWorld;
using testing::run_ranks;

Request req(int rank, const std::string& name, std::vector<int64_t> shape = {8}) {
  return testing::allreduce_request(rank, name, std::move(shape));
}

std::vector<std::string> names(const CycleResult& r) {
  std::vector<std::string> out;
  for (const Response& p : r.responses) out.push_back((p.ok() ? "" : "!") + p.name);
  return out;
}

using Names = std::vector<std::string>;

Config config_with_cache(int64_t capacity) {
  Config c;
  c.cache_capacity = capacity;
  return c;
}

// Each rank runs the same script of cycles; `submit(rank, cycle)` gives its new requests.
// Returns every rank's cycle results.
std::vector<std::vector<CycleResult>> run_cycles(int size, int cycles, const Config& config,
                                                 const std::function<std::vector<Request>(int, int)>& submit,
                                                 Clock clock = steady_seconds) {
  FakeWorld world(size);
  std::vector<std::vector<CycleResult>> results(static_cast<size_t>(size));
  run_ranks(size, [&](int rank) {
    FakeChannel channel(&world, rank);
    Controller controller(&channel, config, clock);
    for (int c = 0; c < cycles; ++c) {
      CycleResult r;
      ASSERT_TRUE(controller.cycle(submit(rank, c), false, &r).ok());
      results[rank].push_back(r);
    }
  });
  return results;
}

TEST(Controller, OpIsReadyWhenTheLastRankSubmitsIt) {
  auto results = run_cycles(3, 3, Config(), [](int rank, int cycle) {
    std::vector<Request> q;
    if (cycle == rank) q.push_back(req(rank, "w"));
    return q;
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(names(results[r][0]), Names{});
    EXPECT_EQ(names(results[r][1]), Names{});
    EXPECT_EQ(names(results[r][2]), Names{"w"});
    EXPECT_TRUE(results[r][2].negotiated);
  }
}

TEST(Controller, RecurringNamesAreAgreedThroughTheCacheAlone) {
  // Two "steps" of the same three names: the second needs no negotiation through rank 0.
  auto results = run_cycles(4, 4, Config(), [](int rank, int cycle) {
    std::vector<Request> q;
    if (cycle == 0 || cycle == 2) {
      for (const char* n : {"c", "a", "b"}) q.push_back(req(rank, n));
    }
    return q;
  });
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(names(results[r][0]), (Names{"c", "a", "b"}));
    EXPECT_TRUE(results[r][0].negotiated);
    EXPECT_EQ(names(results[r][1]), Names{});
    // Cached responses come in cache-position order, the same on every rank.
    EXPECT_EQ(names(results[r][2]), (Names{"c", "a", "b"}));
    EXPECT_FALSE(results[r][2].negotiated);
  }
}

TEST(Controller, WithoutCacheEveryStepIsNegotiated) {
  auto results = run_cycles(2, 2, config_with_cache(0), [](int rank, int) { return std::vector<Request>{req(rank, "a")}; });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(names(results[r][1]), Names{"a"});
    EXPECT_TRUE(results[r][1].negotiated);
  }
}

TEST(Controller, ChangedParametersInvalidateTheCacheEverywhere) {
  // Step 1 caches "a" with shape [8]. In step 2 rank 1 changes the shape: the op must fail as a
  // mismatch on both ranks (not hang with rank 0 waiting on its cached bit).
  auto results = run_cycles(2, 3, Config(), [](int rank, int cycle) {
    std::vector<Request> q;
    if (cycle == 0) q.push_back(req(rank, "a"));
    if (cycle == 1) q.push_back(req(rank, "a", rank == 1 ? std::vector<int64_t>{9} : std::vector<int64_t>{8}));
    return q;
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(names(results[r][0]), Names{"a"});
    ASSERT_EQ(names(results[r][1]), Names{"!a"});
    EXPECT_EQ(results[r][1].responses[0].error,
              "Mismatched shape for tensor 'a' (allreduce): [8] on rank 0, [9] on rank 1.");
  }
}

TEST(Controller, EvictionRenegotiatesWhatWaitedOnTheEvictedEntry) {
  // Capacity 1. Rank 0 submits cached "a" early; meanwhile "b" is negotiated and evicts "a".
  // Rank 0's "a" must then go through rank 0 and still complete once rank 1 submits it.
  auto results = run_cycles(2, 5, config_with_cache(1), [](int rank, int cycle) {
    std::vector<Request> q;
    if (cycle == 0) q.push_back(req(rank, "a"));
    if (cycle == 1 && rank == 0) q.push_back(req(rank, "a"));
    if (cycle == 1) q.push_back(req(rank, "b"));
    if (cycle == 3 && rank == 1) q.push_back(req(rank, "a"));
    return q;
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(names(results[r][0]), Names{"a"});
    EXPECT_EQ(names(results[r][1]), Names{"b"});
    EXPECT_EQ(names(results[r][2]), Names{});
    EXPECT_EQ(names(results[r][3]), Names{"a"});
  }
}

TEST(Controller, ShutdownOnOneRankStopsEveryRank) {
  FakeWorld world(3);
  std::vector<CycleResult> results(3);
  run_ranks(3, [&](int rank) {
    FakeChannel channel(&world, rank);
    Controller controller(&channel, Config());
    ASSERT_TRUE(controller.cycle({req(rank, "a")}, rank == 1, &results[rank]).ok());
  });
  for (const CycleResult& r : results) {
    EXPECT_TRUE(r.shutdown);
    EXPECT_EQ(r.shutdown_ranks, std::vector<int>{1});
    EXPECT_TRUE(r.responses.empty());
  }
}

TEST(Controller, StalledCachedOpFailsOnEveryRankWithStallShutdown) {
  // "a" is cached after step 1. In step 2 only rank 0 submits it. With a 5 s stall limit on a fake
  // clock, the cached request is sent to rank 0 and failed there, on every rank.
  Config config;
  config.stall_check_seconds = 0;
  config.stall_shutdown_seconds = 5;
  std::atomic<int> cycle_seen{0};
  auto clock = [&cycle_seen] { return 2.0 * cycle_seen.load(); };  // 2 s per cycle
  FakeWorld world(2);
  std::vector<std::vector<CycleResult>> results(2);
  run_ranks(2, [&](int rank) {
    FakeChannel channel(&world, rank);
    Controller controller(&channel, config, [&] { return clock(); });
    for (int c = 0; c < 8; ++c) {
      std::vector<Request> q;
      if (c == 0 || (c == 1 && rank == 0)) q.push_back(req(rank, "a"));
      CycleResult r;
      ASSERT_TRUE(controller.cycle(q, false, &r).ok());
      results[rank].push_back(r);
      // Both ranks finish cycle c before the clock moves on (the exchange is a barrier).
      std::vector<uint64_t> sync(1, 0);
      ASSERT_TRUE(channel.allreduce_and(&sync).ok());
      if (rank == 0) cycle_seen = c + 1;
      ASSERT_TRUE(channel.allreduce_and(&sync).ok());
    }
  });
  int failures = 0;
  for (int c = 0; c < 8; ++c) {
    EXPECT_EQ(names(results[0][c]), names(results[1][c])) << "cycle " << c;
    if (names(results[0][c]) == Names{"!a"}) {
      ++failures;
      EXPECT_EQ(results[0][c].responses[0].error_code, StatusCode::kAborted);
    }
  }
  EXPECT_EQ(failures, 1);
}
}  // namespace
}  // namespace kolo

namespace kolo {
namespace {

TEST(ControllerJoin, CachedOpsGoOnWhileARankHasJoined) {
  // "a" is cached after cycle 0. In cycle 1 rank 2 joins while ranks 0 and 1 submit "a" again:
  // it must run on every rank (rank 2 with a stand-in), then the join completes when all joined.
  auto results = run_cycles(3, 4, Config(), [](int rank, int cycle) {
    std::vector<Request> q;
    if (cycle == 0) q.push_back(req(rank, "a"));
    if (cycle == 1) {
      if (rank == 2) {
        Request j;
        j.name = "join";
        j.rank = rank;
        j.kind = OpKind::kJoin;
        q.push_back(j);
      } else {
        q.push_back(req(rank, "a"));
      }
    }
    if (cycle == 2 && rank != 2) {
      Request j;
      j.name = "join";
      j.rank = rank;
      j.kind = OpKind::kJoin;
      q.push_back(j);
    }
    return q;
  });
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(names(results[r][0]), Names{"a"});
    ASSERT_EQ(names(results[r][1]), Names{"a"});
    EXPECT_EQ(results[r][1].responses[0].contributors, 2);
    EXPECT_EQ(results[r][1].joined_ranks, std::vector<int>{2});
    ASSERT_EQ(names(results[r][2]), Names{"join"});
    EXPECT_EQ(results[r][2].joined_ranks, (std::vector<int>{0, 1, 2}));
    EXPECT_TRUE(results[r][3].joined_ranks.empty());
  }
}

TEST(ControllerJoin, AnOpSubmittedAroundTheJoinsEndRunsWhetherARankFoundItCachedOrNot) {
  // "a" is cached in cycle 0; both ranks join in cycle 1. Rank 0 submits "a" in cycle 2, still
  // seeing the join (so not through the cache); rank 1 submits it in cycle 3, after the join (so its
  // cache would hold it). Both must run it, at once, not after the stall inspector's minute.
  auto join = [](int rank) {
    Request j;
    j.name = "join";
    j.rank = rank;
    j.kind = OpKind::kJoin;
    return j;
  };
  auto results = run_cycles(2, 5, Config(), [&](int rank, int cycle) {
    std::vector<Request> q;
    if (cycle == 0) q.push_back(req(rank, "a"));
    if (cycle == 1) q.push_back(join(rank));
    if ((cycle == 2 && rank == 0) || (cycle == 3 && rank == 1)) q.push_back(req(rank, "a"));
    return q;
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(names(results[r][0]), Names{"a"});
    EXPECT_EQ(names(results[r][1]), Names{"join"});
    EXPECT_TRUE(results[r][2].responses.empty());
    EXPECT_EQ(names(results[r][3]), Names{"a"}) << "rank " << r;
  }
}

}  // namespace
}  // namespace kolo
