#include <gtest/gtest.h>

#include "engine/coordinator.h"
#include "engine/response_builder.h"

namespace kolo {
namespace {

Request req(int rank, const std::string& name = "w", OpKind kind = OpKind::kAllreduce,
            std::vector<int64_t> shape = {4, 2}) {
  Request q;
  q.name = name;
  q.rank = rank;
  q.kind = kind;
  q.dtype = DataType::kFloat32;
  q.reduce_op = ReduceOp::kAverage;
  q.shape = std::move(shape);
  return q;
}

TEST(ResponseBuilder, AgreementGivesTheOp) {
  Response r = build_response({req(0), req(1), req(2)});
  EXPECT_TRUE(r.ok());
  EXPECT_EQ(r.name, "w");
  EXPECT_EQ(r.shape, (std::vector<int64_t>{4, 2}));
  EXPECT_EQ(r.reduce_op, ReduceOp::kAverage);
}

TEST(ResponseBuilder, AllgatherCollectsRowsPerRank) {
  Response r = build_response({req(0, "g", OpKind::kAllgather, {3, 2}), req(1, "g", OpKind::kAllgather, {0, 2}),
                               req(2, "g", OpKind::kAllgather, {5, 2})});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.shape, (std::vector<int64_t>{8, 2}));
  EXPECT_EQ(r.first_dims, (std::vector<int64_t>{3, 0, 5}));
}

TEST(ResponseBuilder, AProcessSetsErrorsNameItAndItsMembersJobRanks) {
  // Set 3 of job ranks {1, 4, 6}: its engine counts them 0-2.
  const RankNames names({1, 4, 6}, 3);
  std::vector<Request> qs = {req(0), req(1), req(2)};
  qs[1].dtype = DataType::kFloat64;
  Response r = build_response(qs, {}, names);
  EXPECT_EQ(r.error, "process set 3: Mismatched dtype for tensor 'w' (allreduce): float32 on ranks 1,6, float64 on "
                     "rank 4.");
  qs = {req(0, "b", OpKind::kBroadcast), req(1, "b", OpKind::kBroadcast)};
  qs[1].root = 2;
  r = build_response(qs, {}, names);
  EXPECT_EQ(r.error, "process set 3: Mismatched root rank for tensor 'b' (broadcast): 1 on rank 1, 6 on rank 4.");
  r = build_response({req(0, "a", OpKind::kAlltoall), req(2, "a", OpKind::kAlltoall)}, {1}, names);
  EXPECT_EQ(r.error, "process set 3: alltoall of tensor 'a' failed: it cannot run while rank 4 has joined (join() was "
                     "called; every rank must join before such ops run again).");
  // The job's own engine: ranks as they are, no set named.
  EXPECT_EQ(RankNames().ranks({2, 0, 1}), "ranks 0-2");
  EXPECT_EQ(RankNames().prefix(), "");
}

TEST(ResponseBuilder, EachMismatchNamesTheFieldTensorAndRanks) {
  auto message = [](std::vector<Request> qs) {
    Response r = build_response(qs);
    EXPECT_FALSE(r.ok());
    EXPECT_EQ(r.error_code, StatusCode::kMismatch);
    return r.error;
  };
  std::vector<Request> qs = {req(0), req(1), req(2), req(3)};
  qs[2].dtype = DataType::kFloat64;
  EXPECT_EQ(message(qs), "Mismatched dtype for tensor 'w' (allreduce): float32 on ranks 0-1,3, float64 on rank 2.");

  qs = {req(0), req(1), req(2)};
  qs[1].shape = {4, 3};
  EXPECT_EQ(message(qs), "Mismatched shape for tensor 'w' (allreduce): [4, 2] on ranks 0,2, [4, 3] on rank 1.");

  qs = {req(0), req(1)};
  qs[1].reduce_op = ReduceOp::kSum;
  EXPECT_EQ(message(qs), "Mismatched reduce op for tensor 'w' (allreduce): Average on rank 0, Sum on rank 1.");

  qs = {req(0), req(1)};
  qs[0].prescale = 0.5;
  EXPECT_EQ(message(qs), "Mismatched prescale factor for tensor 'w' (allreduce): 0.5 on rank 0, 1 on rank 1.");

  qs = {req(0), req(1)};
  qs[1].postscale = 3;
  EXPECT_EQ(message(qs), "Mismatched postscale factor for tensor 'w' (allreduce): 1 on rank 0, 3 on rank 1.");

  qs = {req(0), req(1)};
  qs[1].compression = Compression::kFloat16;
  EXPECT_EQ(message(qs), "Mismatched compression for tensor 'w' (allreduce): none on rank 0, fp16 on rank 1.");

  qs = {req(0, "w", OpKind::kBroadcast), req(1, "w", OpKind::kBroadcast), req(2, "w", OpKind::kBroadcast)};
  qs[2].root = 1;
  EXPECT_EQ(message(qs), "Mismatched root rank for tensor 'w' (broadcast): 0 on ranks 0-1, 1 on rank 2.");

  qs = {req(0), req(1, "w", OpKind::kBroadcast)};
  EXPECT_EQ(message(qs), "Mismatched op kind for tensor 'w' (allreduce): allreduce on rank 0, broadcast on rank 1.");

  qs = {req(0, "g", OpKind::kAllgather, {3, 2}), req(1, "g", OpKind::kAllgather, {3, 5})};
  EXPECT_EQ(message(qs),
            "Mismatched shape (beyond the first dimension) for tensor 'g' (allgather): [*, 2] on rank 0, [*, 5] on rank 1.");

  qs = {req(0), req(1)};
  qs[1].device = DeviceType::kCUDA;
  EXPECT_EQ(message(qs), "Mismatched device for tensor 'w' (allreduce): CPU on rank 0, GPU on rank 1.");
}

TEST(ResponseBuilder, FieldsAnOpDoesNotUseAreNotCompared) {
  std::vector<Request> qs = {req(0, "b", OpKind::kBroadcast), req(1, "b", OpKind::kBroadcast)};
  qs[1].reduce_op = ReduceOp::kSum;  // meaningless for broadcast
  EXPECT_TRUE(build_response(qs).ok());
  qs = {req(0, "a", OpKind::kAlltoall, {4, 2}), req(1, "a", OpKind::kAlltoall, {6, 2})};
  EXPECT_TRUE(build_response(qs).ok());
}

TEST(Coordinator, ReadyOnceEveryRankSubmittedInCompletionOrder) {
  Coordinator c(3, StallPolicy{});
  c.add(req(0, "a"), 0);
  c.add(req(0, "b"), 0);
  c.add(req(1, "b"), 0);
  c.add(req(1, "a"), 0);
  EXPECT_TRUE(c.take_ready().empty());
  c.add(req(2, "b"), 0);
  c.add(req(2, "a"), 0);
  std::vector<Response> ready = c.take_ready();
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0].name, "b");
  EXPECT_EQ(ready[1].name, "a");
  EXPECT_EQ(c.pending(), 0u);
}

TEST(Coordinator, StallReportGroupsOpsByMissingRanksAndSaysWhatTheyDidInstead) {
  Coordinator c(4, StallPolicy{60, 0});
  for (const char* name : {"grad/a", "grad/b", "grad/c", "grad/d", "grad/e", "grad/f"}) {
    for (int r : {0, 1, 2}) c.add(req(r, name), 0.0);
  }
  c.add(req(3, "eval/loss"), 5.0);
  EXPECT_TRUE(c.check_stalls(59.0).report.empty());
  StallCheck check = c.check_stalls(61.0);
  EXPECT_EQ(check.report,
            "Stall: some ranks have submitted ops that others have not, for more than 60 s. Ranks must submit the "
            "same names: look for a branch taken on some ranks only (an extra evaluation step, uneven data).\n"
            "  6 ops waiting up to 61 s, submitted by ranks 0-2, missing on rank 3: 'grad/a', 'grad/b', 'grad/c', "
            "'grad/d' and 2 more\n"
            "    rank 3 submitted instead: 'eval/loss'");
  EXPECT_TRUE(check.failures.empty());
  // Reported once, not every check.
  EXPECT_TRUE(c.check_stalls(62.0).report.empty());
  // eval/loss stalls too once it has waited long enough (submitted at 5 s).
  check = c.check_stalls(66.0);
  EXPECT_EQ(check.report,
            "Stall: some ranks have submitted ops that others have not, for more than 60 s. Ranks must submit the "
            "same names: look for a branch taken on some ranks only (an extra evaluation step, uneven data).\n"
            "  1 op waiting up to 61 s, submitted by rank 3, missing on ranks 0-2: 'eval/loss'\n"
            "    ranks 0-2 submitted instead: 'grad/a', 'grad/b', 'grad/c', 'grad/d' and 2 more");
}

TEST(Coordinator, StallShutdownFailsTheOpOnEveryRank) {
  Coordinator c(2, StallPolicy{0, 10});
  Request q = req(0, "x");
  q.waited_seconds = 4.0;  // waited in this rank's cache before coming to rank 0
  c.add(q, 100.0);
  EXPECT_TRUE(c.check_stalls(105.9).failures.empty());
  StallCheck check = c.check_stalls(106.0);
  ASSERT_EQ(check.failures.size(), 1u);
  EXPECT_EQ(check.failures[0].name, "x");
  EXPECT_EQ(check.failures[0].error_code, StatusCode::kAborted);
  EXPECT_EQ(check.failures[0].error,
            "Stalled op failed: tensor 'x' (allreduce) was submitted by rank 0 but not by rank 1 within "
            "KOLO_STALL_SHUTDOWN_SECONDS=10.\n    rank 1 submitted instead: nothing (not yet at this step, or busy "
            "outside kolo)");
  EXPECT_EQ(c.pending(), 0u);
}

}  // namespace
}  // namespace kolo

namespace kolo {
namespace {

Request join_req(int rank) {
  Request q;
  q.name = "join";
  q.rank = rank;
  q.kind = OpKind::kJoin;
  return q;
}

TEST(CoordinatorJoin, JoinedRanksCountAsSubmittedAndTheLastJoinCompletes) {
  Coordinator c(3, StallPolicy{});
  c.add(req(0, "a"), 0);
  c.add(join_req(2), 0);
  EXPECT_TRUE(c.take_ready().empty());
  c.add(req(1, "a"), 0);
  std::vector<Response> ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].name, "a");
  EXPECT_TRUE(ready[0].ok());
  EXPECT_EQ(ready[0].contributors, 2);
  // An op submitted before its rank joined runs once the others join too.
  c.add(req(0, "b"), 0);
  c.add(join_req(0), 0);
  c.add(join_req(1), 0);
  ready = c.take_ready();
  ASSERT_EQ(ready.size(), 2u);
  EXPECT_EQ(ready[0].name, "b");
  EXPECT_EQ(ready[0].contributors, 1);
  EXPECT_EQ(ready[1].kind, OpKind::kJoin);
  EXPECT_EQ(ready[1].root, 1);  // the last rank to join
  // The next op needs every rank again.
  c.add(req(0, "c"), 0);
  c.add(req(1, "c"), 0);
  EXPECT_TRUE(c.take_ready().empty());
  c.add(req(2, "c"), 0);
  ready = c.take_ready();
  ASSERT_EQ(ready.size(), 1u);
  EXPECT_EQ(ready[0].contributors, 0);
}

TEST(CoordinatorJoin, AllgatherGivesJoinedRanksNoRowsAndSomeOpsCannotRun) {
  Coordinator c(3, StallPolicy{});
  c.add(join_req(1), 0);
  c.add(req(0, "g", OpKind::kAllgather, {2, 4}), 0);
  c.add(req(2, "g", OpKind::kAllgather, {3, 4}), 0);
  Request b0 = req(0, "b", OpKind::kBroadcast), b2 = req(2, "b", OpKind::kBroadcast);
  b0.root = b2.root = 1;
  c.add(b0, 0);
  c.add(b2, 0);
  c.add(req(0, "x", OpKind::kAlltoall, {3}), 0);
  c.add(req(2, "x", OpKind::kAlltoall, {3}), 0);
  std::vector<Response> ready = c.take_ready();
  ASSERT_EQ(ready.size(), 3u);
  EXPECT_EQ(ready[0].first_dims, (std::vector<int64_t>{2, 0, 3}));
  EXPECT_EQ(ready[0].shape, (std::vector<int64_t>{5, 4}));
  EXPECT_EQ(ready[1].error,
            "broadcast of tensor 'b' failed: its root rank 1 has joined (join() was called; every rank must join "
            "before such ops run again).");
  EXPECT_EQ(ready[2].error,
            "alltoall of tensor 'x' failed: it cannot run while rank 1 has joined (join() was called; every rank "
            "must join before such ops run again).");
}

TEST(CoordinatorJoin, JoinedRanksAreNotReportedMissing) {
  Coordinator c(3, StallPolicy{10, 0});
  c.add(join_req(2), 0);
  c.add(req(0, "w"), 0);
  StallCheck check = c.check_stalls(11);
  EXPECT_NE(check.report.find("submitted by rank 0, missing on rank 1: 'w'"), std::string::npos) << check.report;
}

}  // namespace
}  // namespace kolo
