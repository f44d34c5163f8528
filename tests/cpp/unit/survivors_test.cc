// The Gloo world's survivors' agreement (comm/gloo/survivors.h) over kolo's own store, ranks as threads with
// a store connection and a liveness each; a rank "dies" by closing its liveness's connection, as a killed
// process's closes. Silence never decides here (lost_after is a day): only a process's held keys do, so a
// rank the agreement waited for in vain would hang the call, which the suite's ctest timeout ends.
#include <future>

#include "comm/gloo/liveness.h"
#include "comm/gloo/survivors.h"
#include "tcp_store_test_util.h"

namespace kolo {
namespace {

using namespace store_test;  // NOLINT: the store suite's helpers

constexpr double kNever = 24 * 3600;

struct Rank {
  std::unique_ptr<TcpStoreClient> store;
  std::unique_ptr<Liveness> liveness;
};

std::vector<Rank> start_ranks(const TcpStoreServer& server, int n) {
  std::vector<Rank> ranks(static_cast<size_t>(n));
  for (Rank& r : ranks) {
    r.store = connect_to(server.port());
    const Status s = Liveness::start("127.0.0.1", server.port(), "", 0.05, &r.liveness);
    EXPECT_TRUE(s.ok()) << s.to_string();
  }
  return ranks;
}

// agree_on_survivors on each of `who` (ranks of `failed`, each ranks[r]) at once; their results in that order.
std::vector<SurvivorsAgreed> agree(std::vector<Rank>& ranks, const std::vector<int>& who, Generation failed,
                                   const std::string& next) {
  std::vector<std::future<SurvivorsAgreed>> results;
  for (int r : who) {
    results.push_back(std::async(std::launch::async, [&ranks, r, failed, next] {
      Generation mine = failed;
      mine.rank = r;
      SurvivorsAgreed agreed;
      const Status s = agree_on_survivors(*ranks[static_cast<size_t>(r)].store, mine, next, kNever, &agreed);
      EXPECT_TRUE(s.ok()) << "rank " << r << ": " << s.to_string();
      return agreed;
    }));
  }
  std::vector<SurvivorsAgreed> out;
  for (auto& f : results) out.push_back(f.get());
  return out;
}

TEST(Survivors, AKilledRankIsLeftOutAndTheOthersAgreeOnOneAnswer) {
  auto server = serve();
  auto ranks = start_ranks(*server, 3);
  const Generation g0{"kolo/t/0/", 0, 3, ""};
  for (int r = 0; r < 3; ++r) ASSERT_TRUE(ranks[static_cast<size_t>(r)].liveness->enter(Generation{g0.prefix, r, 3, ""}).ok());
  ranks[2] = Rank();  // killed
  const auto agreed = agree(ranks, {0, 1}, g0, "kolo/t/0/g1/");
  ASSERT_EQ(agreed.size(), 2u);
  EXPECT_EQ(agreed[0].members, (std::vector<int>{0, 1}));
  EXPECT_EQ(agreed[1].members, (std::vector<int>{0, 1}));
  EXPECT_EQ(agreed[0].nonce, agreed[1].nonce);
  EXPECT_FALSE(agreed[0].nonce.empty());
}

TEST(Survivors, ARankLostBetweenAgreeingAndEnteringTheNewGenerationIsLeftOutAtOnce) {
  // The chaos soak's second kill inside a recovery: rank 1 agreed on g1 with rank 0, then ended before it
  // entered g1, so it never beat there; its held key of g0 tells that its process is gone.
  auto server = serve();
  auto ranks = start_ranks(*server, 3);
  const Generation g0{"kolo/t/0/", 0, 3, ""};
  for (int r = 0; r < 3; ++r) ASSERT_TRUE(ranks[static_cast<size_t>(r)].liveness->enter(Generation{g0.prefix, r, 3, ""}).ok());
  ranks[2] = Rank();
  const auto agreed = agree(ranks, {0, 1}, g0, "kolo/t/0/g1/");
  ASSERT_EQ(agreed[0].members, (std::vector<int>{0, 1}));

  EXPECT_TRUE(members_still_there(*ranks[0].store, g0, agreed[0].members).ok());
  ranks[1] = Rank();  // killed before entering g1
  // The server drops the held key once it has read the connection's close: soon, not at once.
  Status gone;
  for (int i = 0; i < 500 && gone.ok(); ++i) {
    gone = members_still_there(*ranks[0].store, g0, agreed[0].members);
    if (gone.ok()) std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(gone.code(), StatusCode::kPeersFailed);
  EXPECT_NE(gone.message().find("rank 1 of the failed generation"), std::string::npos) << gone.message();

  const Generation g1{"kolo/t/0/g1/", 0, 2, g0.prefix};
  ASSERT_TRUE(ranks[0].liveness->enter(g1).ok());
  const auto alone = agree(ranks, {0}, g1, "kolo/t/0/g2/");
  ASSERT_EQ(alone.size(), 1u);
  EXPECT_EQ(alone[0].members, (std::vector<int>{0}));
}

TEST(Survivors, ALiveRankThatComesLateIsWaitedFor) {
  // Rank 1 of g1 never beat there but still holds its key of g0: alive, so the agreement waits for it.
  auto server = serve();
  auto ranks = start_ranks(*server, 2);
  const Generation g0{"kolo/t/0/", 0, 2, ""};
  for (int r = 0; r < 2; ++r) ASSERT_TRUE(ranks[static_cast<size_t>(r)].liveness->enter(Generation{g0.prefix, r, 2, ""}).ok());
  const auto both = agree(ranks, {0, 1}, g0, "kolo/t/0/g1/");
  ASSERT_EQ(both[0].members, (std::vector<int>{0, 1}));
  const Generation g1{"kolo/t/0/g1/", 0, 2, g0.prefix};
  ASSERT_TRUE(ranks[0].liveness->enter(g1).ok());
  auto early = std::async(std::launch::async, [&] { return agree(ranks, {0}, g1, "kolo/t/0/g2/"); });
  EXPECT_EQ(early.wait_for(std::chrono::milliseconds(500)), std::future_status::timeout);  // still waiting for rank 1
  const auto late = agree(ranks, {1}, g1, "kolo/t/0/g2/");
  EXPECT_EQ(late[0].members, (std::vector<int>{0, 1}));
  EXPECT_EQ(early.get()[0].members, (std::vector<int>{0, 1}));
}

}  // namespace
}  // namespace kolo
