// Process sets at whatever number of ranks mpirun started: every collective in disjoint and in
// overlapping sets at once, exact; registration and removal agreed on every rank; errors naming the
// set and job ranks; a set waiting on a member never holding up another set.
#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "kolo/c_api.h"
#include "mpi_test_util.h"

namespace kolo {
namespace {

using testing::Buffer;

bool in(const std::vector<int>& ranks, int r) { return std::find(ranks.begin(), ranks.end(), r) != ranks.end(); }

// Every collective in set `id` (members `ranks`), from a member, checked exactly.
void every_collective(int id, const std::vector<int>& ranks, const std::string& tag) {
  const int me = rank();
  const int n = static_cast<int>(ranks.size());
  const int set_rank = static_cast<int>(std::find(ranks.begin(), ranks.end(), me) - ranks.begin());
  const double sum_of_ranks = std::accumulate(ranks.begin(), ranks.end(), 0.0);

  Buffer x(DataType::kFloat32, {3});
  for (size_t i = 0; i < 3; ++i) x.set(i, me + 10.0 * i);
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  sum.process_set = id;
  ASSERT_TRUE(allreduce(tag + ".ar", x.view(), x.view(), sum).ok());
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(x.get(i), sum_of_ranks + 10.0 * i * n) << tag;

  Buffer rows(DataType::kInt32, {me + 1});  // job rank + 1 rows of the job rank
  for (size_t i = 0; i < rows.size(); ++i) rows.set(i, me);
  SizedOutputOptions in_set;
  in_set.process_set = id;
  Output gathered;
  ASSERT_TRUE(allgather(tag + ".ag", rows.view(), &gathered, in_set).ok());
  std::vector<int32_t> expected;
  for (int r : ranks) expected.insert(expected.end(), static_cast<size_t>(r + 1), r);
  ASSERT_EQ(gathered.view.shape, std::vector<int64_t>{static_cast<int64_t>(expected.size())}) << tag;
  EXPECT_EQ(std::vector<int32_t>(static_cast<const int32_t*>(gathered.view.data),
                                 static_cast<const int32_t*>(gathered.view.data) + expected.size()),
            expected)
      << tag;

  BroadcastOptions bo;
  bo.process_set = id;
  Buffer b(DataType::kFloat64, {2});
  b.set(0, me);
  b.set(1, -me);
  ASSERT_TRUE(broadcast(tag + ".bc", b.view(), b.view(), ranks.back(), bo).ok());  // root: a job rank
  EXPECT_EQ(b.get(0), ranks.back()) << tag;
  EXPECT_EQ(b.get(1), -ranks.back()) << tag;

  Buffer send(DataType::kInt64, {n});
  for (int r = 0; r < n; ++r) send.set(static_cast<size_t>(r), 100 * me + ranks[r]);
  Output received;
  ASSERT_TRUE(alltoall(tag + ".a2a", send.view(), {}, &received, in_set).ok());
  for (int r = 0; r < n; ++r) EXPECT_EQ(static_cast<const int64_t*>(received.view.data)[r], 100 * ranks[r] + me) << tag;

  Buffer full(DataType::kFloat32, {n * 2});
  for (size_t i = 0; i < full.size(); ++i) full.set(i, static_cast<double>(i));
  Buffer mine(DataType::kFloat32, {2});
  ReducescatterOptions ro;
  ro.op = ReduceOp::kSum;
  ro.process_set = id;
  ASSERT_TRUE(reducescatter(tag + ".rs", full.view(), mine.view(), ro).ok());
  EXPECT_EQ(mine.get(0), n * (2.0 * set_rank)) << tag;
  EXPECT_EQ(mine.get(1), n * (2.0 * set_rank + 1)) << tag;

  ASSERT_TRUE(wait(barrier_async(id)).ok()) << tag;
}

TEST(ProcessSets, DisjointSetsRunEveryCollectiveAtOnce) {
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks";
  std::vector<int> even, odd;
  for (int r = 0; r < size(); ++r) (r % 2 ? odd : even).push_back(r);
  int even_id = -1, odd_id = -1;
  Status added = add_process_set(even, &even_id);
  ASSERT_TRUE(added.ok()) << added.message();
  ASSERT_TRUE(add_process_set(odd, &odd_id).ok());
  EXPECT_EQ(odd_id, even_id + 1);
  std::vector<int> members;
  int my_place = -2;
  ASSERT_TRUE(process_set_ranks(odd_id, &members, &my_place).ok());
  EXPECT_EQ(members, odd);
  EXPECT_EQ(my_place, rank() % 2 ? rank() / 2 : -1);
  // The same names in both sets at once: each set is its own namespace.
  if (rank() % 2) {
    every_collective(odd_id, odd, "ps");
  } else {
    every_collective(even_id, even, "ps");
  }
  // And the job's ops go on beside them.
  Buffer one(DataType::kInt32, {1});
  one.set(0, 1);
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  ASSERT_TRUE(allreduce("ps.global", one.view(), one.view(), sum).ok());
  EXPECT_EQ(one.get(0), size());
  {
    const Status removed = remove_process_set(odd_id);
    ASSERT_TRUE(removed.ok()) << removed.message();
  }
  {
    const Status removed = remove_process_set(even_id);
    ASSERT_TRUE(removed.ok()) << removed.message();
  }
  EXPECT_EQ(process_set_ids(), std::vector<int>{0});
}

TEST(ProcessSets, OverlappingSetsShareARank) {
  if (size() < 3) GTEST_SKIP() << "needs 3 ranks";
  const std::vector<int> a = {0, 1}, b = {1, 2};
  int ida = -1, idb = -1;
  ASSERT_TRUE(add_process_set(a, &ida).ok());
  ASSERT_TRUE(add_process_set({2, 1}, &idb).ok());  // any order
  if (in(a, rank())) {
    every_collective(ida, a, "overlap.a");
  }
  if (in(b, rank())) {
    every_collective(idb, b, "overlap.b");
  }
  // Rank 1 has ops in both sets in flight at once.
  if (in(a, rank()) || in(b, rank())) {
    std::vector<Handle> handles;
    std::vector<Buffer> buffers;
    for (int id : {ida, idb}) {
      if (!in(id == ida ? a : b, rank())) continue;
      buffers.emplace_back(DataType::kFloat32, std::vector<int64_t>{4});
    }
    size_t k = 0;
    for (int id : {ida, idb}) {
      if (!in(id == ida ? a : b, rank())) continue;
      AllreduceOptions o;
      o.op = ReduceOp::kSum;
      o.process_set = id;
      for (size_t i = 0; i < 4; ++i) buffers[k].set(i, 1.0);
      handles.push_back(allreduce_async("both", buffers[k].view(), buffers[k].view(), o));
      ++k;
    }
    for (Handle h : handles) ASSERT_TRUE(wait(h).ok());
    for (const Buffer& buf : buffers) EXPECT_EQ(buf.get(3), 2.0);
  }
  {
    const Status removed = remove_process_set(ida);
    ASSERT_TRUE(removed.ok()) << removed.message();
  }
  {
    const Status removed = remove_process_set(idb);
    ASSERT_TRUE(removed.ok()) << removed.message();
  }
}

TEST(ProcessSets, ASetWaitingOnAMemberNeverHoldsUpAnother) {
  if (size() < 4) GTEST_SKIP() << "needs 4 ranks";
  int slow = -1, fast = -1;
  ASSERT_TRUE(add_process_set({0, 1}, &slow).ok());
  ASSERT_TRUE(add_process_set({2, 3}, &fast).ok());
  Buffer x(DataType::kFloat32, {8});
  AllreduceOptions o;
  o.op = ReduceOp::kSum;
  Handle pending;
  if (rank() == 1) {  // rank 0 holds back: set {0, 1} waits
    o.process_set = slow;
    pending = allreduce_async("slow", x.view(), x.view(), o);
  }
  if (rank() == 2 || rank() == 3) {  // meanwhile set {2, 3} runs 200 ops to completion
    o.process_set = fast;
    for (int i = 0; i < 200; ++i) ASSERT_TRUE(allreduce("fast." + std::to_string(i), x.view(), x.view(), o).ok());
  }
  if (rank() == 1) {
    EXPECT_FALSE(poll(pending).has_value()) << "the slow set's op ran without rank 0";
  }
  ASSERT_TRUE(barrier().ok());  // the job's barrier: set {2, 3} is done
  if (rank() == 0) {
    o.process_set = slow;
    ASSERT_TRUE(allreduce("slow", x.view(), x.view(), o).ok());
  }
  if (rank() == 1) {
    ASSERT_TRUE(wait(pending).ok());
  }
  {
    const Status removed = remove_process_set(slow);
    ASSERT_TRUE(removed.ok()) << removed.message();
  }
  {
    const Status removed = remove_process_set(fast);
    ASSERT_TRUE(removed.ok()) << removed.message();
  }
}

TEST(ProcessSets, ErrorsNameTheSetAndJobRanksOnEveryRank) {
  if (size() < 3) GTEST_SKIP() << "needs 3 ranks";
  const std::string me = std::to_string(rank());
  // Ranks that disagree: every rank fails, saying who asked for what.
  int id = -1;
  Status s = add_process_set(rank() == 0 ? std::vector<int>{0, 1} : std::vector<int>{1, 2}, &id);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "add_process_set on rank " + me + ": the ranks passed different ranks: [0, 1] on rank 0, "
                         "[1, 2] on ranks 1-" + std::to_string(size() - 1));
  s = add_process_set({0, size()}, &id);
  EXPECT_NE(s.message().find("are not all ranks of this job"), std::string::npos) << s.message();
  s = add_process_set({1, 1}, &id);
  EXPECT_NE(s.message().find("name a rank twice"), std::string::npos) << s.message();

  ASSERT_TRUE(add_process_set({1, 2}, &id).ok());
  s = add_process_set({2, 1}, nullptr);
  EXPECT_NE(s.message().find("already form process set " + std::to_string(id)), std::string::npos) << s.message();
  Buffer x(DataType::kFloat32, {2});
  AllreduceOptions o;
  o.process_set = id;
  if (!in({1, 2}, rank())) {  // not a member: refused at once, alone
    s = allreduce("outsider", x.view(), x.view(), o);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
    EXPECT_EQ(s.message(), "allreduce of tensor 'outsider' on rank " + me + ": this rank is not in process set " +
                               std::to_string(id) + " (ranks [1, 2])");
  } else {
    // Members disagree on the dtype: both fail, named by job rank, with the set.
    Buffer y(rank() == 1 ? DataType::kFloat32 : DataType::kInt32, {2});
    s = allreduce("mixed", y.view(), y.view(), o);
    EXPECT_EQ(s.code(), StatusCode::kMismatch);
    EXPECT_EQ(s.message(), "process set " + std::to_string(id) +
                               ": Mismatched dtype for tensor 'mixed' (allreduce): float32 on rank 1, int32 on rank 2.");
    // A root outside the set is refused.
    BroadcastOptions bo;
    bo.process_set = id;
    s = broadcast("root", x.view(), x.view(), 0, bo);
    EXPECT_NE(s.message().find("root rank 0 is not in process set"), std::string::npos) << s.message();
  }
  o.process_set = 99;
  s = allreduce("nowhere", x.view(), x.view(), o);
  EXPECT_NE(s.message().find("there is no process set 99"), std::string::npos) << s.message();

  // Removing with an op in flight on a member is refused on every rank; once it is done, it goes.
  Handle pending;
  o.process_set = id;
  o.op = ReduceOp::kSum;
  if (rank() == 1) pending = allreduce_async("in.flight", x.view(), x.view(), o);
  s = remove_process_set(id);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "remove_process_set on rank " + me + ": process set " + std::to_string(id) +
                             " still has ops in flight on rank 1; wait for them before removing it");
  if (rank() == 2) {
    ASSERT_TRUE(allreduce("in.flight", x.view(), x.view(), o).ok());
  }
  if (rank() == 1) {
    ASSERT_TRUE(wait(pending).ok());
  }
  ASSERT_TRUE(barrier().ok());
  {
    const Status removed = remove_process_set(id);
    EXPECT_TRUE(removed.ok()) << removed.message();
  }
  s = remove_process_set(id);
  EXPECT_NE(s.message().find("there is no process set " + std::to_string(id)), std::string::npos) << s.message();
  EXPECT_EQ(remove_process_set(0).message(), "remove_process_set on rank " + me +
                                                 ": the global process set (0) cannot be removed");
}

// The C ABI's process sets: registering, the queries, an op in a set, removing.
TEST(ProcessSets, CApi) {
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks (a set of every rank is the global one)";
  // The last two ranks at 3 ranks and more; rank 1 alone at 2.
  const std::vector<int32_t> members = size() > 2 ? std::vector<int32_t>{size() - 2, size() - 1}
                                                  : std::vector<int32_t>{1};
  const int32_t n = static_cast<int32_t>(members.size());
  int32_t id = -1;
  ASSERT_EQ(kolo_add_process_set(members.data(), n, &id), KOLO_OK) << kolo_last_error();
  EXPECT_EQ(kolo_process_set_size(id), n);
  const auto mine = std::find(members.begin(), members.end(), rank());
  EXPECT_EQ(kolo_process_set_rank(id), mine == members.end() ? -1 : static_cast<int32_t>(mine - members.begin()));
  std::vector<int32_t> ranks(static_cast<size_t>(n), -1);
  ASSERT_EQ(kolo_process_set_ranks(id, ranks.data(), n), KOLO_OK);
  EXPECT_EQ(ranks, members);
  std::vector<int32_t> ids(static_cast<size_t>(kolo_process_set_ids(nullptr, 0)));
  kolo_process_set_ids(ids.data(), static_cast<int32_t>(ids.size()));
  EXPECT_EQ(ids.front(), 0);
  EXPECT_TRUE(std::find(ids.begin(), ids.end(), id) != ids.end());
  if (mine != members.end()) {
    float data[2] = {1.0f * rank(), 1.0f};
    const int64_t shape[] = {2};
    kolo_tensor t = {data, KOLO_FLOAT32, 1, shape, nullptr, KOLO_CPU, 0, nullptr};
    kolo_op_options o;
    kolo_op_options_init(&o);
    o.process_set = id;
    o.name = "c.set";
    o.reduce_op = KOLO_SUM;
    kolo_handle h = 0;
    ASSERT_EQ(kolo_allreduce(&t, &t, &o, &h), KOLO_OK) << kolo_last_error();
    ASSERT_EQ(kolo_wait(h, -1, nullptr), KOLO_OK) << kolo_last_error();
    EXPECT_EQ(data[0], static_cast<float>(std::accumulate(members.begin(), members.end(), 0)));
    EXPECT_EQ(data[1], static_cast<float>(n));
    o.blocking = 1;
    ASSERT_EQ(kolo_barrier(&o, nullptr), KOLO_OK) << kolo_last_error();
  } else {
    // A rank outside the set is refused at once, with no handle.
    float data[1] = {0.0f};
    const int64_t shape[] = {1};
    kolo_tensor t = {data, KOLO_FLOAT32, 1, shape, nullptr, KOLO_CPU, 0, nullptr};
    kolo_op_options o;
    kolo_op_options_init(&o);
    o.process_set = id;
    o.name = "c.outside";
    kolo_handle h = 77;
    EXPECT_EQ(kolo_allreduce(&t, &t, &o, &h), KOLO_INVALID_ARGUMENT);
    EXPECT_EQ(h, 0);
  }
  EXPECT_EQ(kolo_process_set_size(12345), -1);
  EXPECT_NE(std::string(kolo_last_error()).find("there is no process set 12345"), std::string::npos);
  ASSERT_TRUE(barrier().ok());
  EXPECT_EQ(kolo_remove_process_set(id), KOLO_OK) << kolo_last_error();
}

}  // namespace
}  // namespace kolo
