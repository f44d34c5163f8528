#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "engine/handle_table.h"
#include "engine/tensor_queue.h"

namespace kolo {
namespace {

std::unique_ptr<TensorEntry> entry(const std::string& name, int rank = 0) {
  auto e = std::make_unique<TensorEntry>();
  e->request.name = name;
  e->request.rank = rank;
  return e;
}

TEST(TensorQueue, RejectsANameAlreadyInFlight) {
  TensorQueue q;
  ASSERT_TRUE(q.push(entry("a", 2)).ok());
  Status s = q.push(entry("a", 2));
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "tensor 'a' is already in flight on rank 2: wait for it before submitting the name again");
  std::vector<Request> fresh;
  EXPECT_EQ(q.take_new(&fresh), 1u);
  EXPECT_EQ(fresh[0].name, "a");
  EXPECT_EQ(q.take_new(&fresh), 0u);
  ASSERT_NE(q.remove("a"), nullptr);
  EXPECT_TRUE(q.push(entry("a")).ok());
}

TEST(TensorQueue, KolosThreadLeavesAQuietPushToTheCallerDrivingIt) {
  TensorQueue q;
  std::atomic<int> drivers{0};
  std::vector<Request> fresh;
  auto a = entry("a");
  a->handle = 1;
  ASSERT_TRUE(q.push(std::move(a)).ok());  // an async op: it wakes kolo's thread
  drivers = 1;
  auto b = entry("b");
  b->handle = 2;
  ASSERT_TRUE(q.push(std::move(b), /*wake=*/false).ok());  // a blocking one: its caller drives
  EXPECT_EQ(q.in_flight(), 2u);
  EXPECT_FALSE(q.only(2));
  // While the caller drives, kolo's thread takes nothing: the caller's cycle takes both.
  EXPECT_EQ(q.take_new_unless_driven(&fresh, drivers), TensorQueue::kLeftToCaller);
  ASSERT_EQ(q.take_new(&fresh), 2u);
  EXPECT_EQ(fresh[0].name, "a");
  EXPECT_EQ(fresh[1].name, "b");
  // A caller that has left (drivers back to 0) leaves its op to kolo's thread.
  auto c = entry("c");
  c->handle = 3;
  ASSERT_TRUE(q.push(std::move(c), /*wake=*/false).ok());
  drivers = 0;
  ASSERT_EQ(q.take_new_unless_driven(&fresh, drivers), 1u);
  EXPECT_EQ(fresh[0].name, "c");
  ASSERT_NE(q.remove("a"), nullptr);
  ASSERT_NE(q.remove("b"), nullptr);
  EXPECT_TRUE(q.only(3));
  EXPECT_EQ(q.in_flight(), 1u);
}

TEST(TensorQueue, CloseHandsBackEverythingAndRefusesMore) {
  TensorQueue q;
  ASSERT_TRUE(q.push(entry("a")).ok());
  ASSERT_TRUE(q.push(entry("b")).ok());
  EXPECT_EQ(q.close("stopped").size(), 2u);
  Status s = q.push(entry("c"));
  EXPECT_EQ(s.code(), StatusCode::kNotInitialized);
  EXPECT_EQ(s.message(), "stopped");
}

TEST(TensorQueue, AFinishedEntryComesBackAsANewOneWithItsMemory) {
  TensorQueue q;
  std::unique_ptr<TensorEntry> e = q.new_entry();
  e->request.name = "a name longer than a short string's own buffer";
  e->request.shape = {4, 2};
  e->request.reduce_op = ReduceOp::kMax;
  e->request.root = 3;
  e->input.shape = {4, 2};
  e->splits = {1, 3};
  e->handle = 7;
  e->deferred_error = Status::Internal("left by the last op");
  const TensorEntry* used = e.get();
  const char* name_memory = e->request.name.data();
  q.recycle(std::move(e));
  std::unique_ptr<TensorEntry> again = q.new_entry();
  ASSERT_EQ(again.get(), used);
  EXPECT_EQ(again->request.name.data(), name_memory);  // kept for the next op's name
  EXPECT_TRUE(again->request.name.empty());
  EXPECT_TRUE(again->request.shape.empty());
  EXPECT_EQ(again->request.reduce_op, ReduceOp::kSum);
  EXPECT_EQ(again->request.root, 0);
  EXPECT_TRUE(again->input.shape.empty());
  EXPECT_TRUE(again->splits.empty());
  EXPECT_EQ(again->handle, 0);
  EXPECT_TRUE(again->deferred_error.ok());
  EXPECT_NE(q.new_entry().get(), used);  // none spare now: a new one
}

TEST(TensorQueue, ARemovedNameCanBePushedAgainAndIsFoundUnderItsNewName) {
  TensorQueue q;
  ASSERT_TRUE(q.push(entry("first")).ok());
  ASSERT_NE(q.remove("first"), nullptr);  // its node is kept, then reused for "second"
  ASSERT_TRUE(q.push(entry("second")).ok());
  EXPECT_EQ(q.find("first"), nullptr);
  ASSERT_NE(q.find("second"), nullptr);
  EXPECT_EQ(q.find("second")->request.name, "second");
  std::vector<Request> fresh;
  ASSERT_EQ(q.take_new(&fresh), 2u);
  EXPECT_EQ(fresh[0].name, "first");
  EXPECT_EQ(fresh[1].name, "second");
}

TEST(HandleTable, AReusedHandleIsNewAndTheOldOneStaysUnknown) {
  HandleTable t;
  const int64_t a = t.create({}, "first");
  t.complete(a, Status::OK(), Output());
  ASSERT_TRUE(t.wait(a, -1, nullptr).ok());
  const int64_t b = t.create({}, "second");  // in a's node
  EXPECT_NE(a, b);
  EXPECT_EQ(t.poll(a)->code(), StatusCode::kUnknownHandle);
  EXPECT_FALSE(t.poll(b).has_value());  // not done, though a's was
  EXPECT_EQ(t.fail_pending(Status::Aborted("gone")), 1u);
  const Status s = t.wait(b, -1, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(s.message(), "tensor 'second' did not run: gone");
}

TEST(HandleTable, WaitReturnsTheStatusOnceAndReleases) {
  HandleTable t;
  const int64_t h = t.create();
  EXPECT_FALSE(t.poll(h).has_value());
  std::thread done([&] { t.complete(h, Status::Mismatch("no"), Output()); });
  Status s = t.wait(h, -1, nullptr);
  done.join();
  EXPECT_EQ(s.code(), StatusCode::kMismatch);
  EXPECT_EQ(t.size(), 0u);
  const Status unknown = t.wait(h, -1, nullptr);
  EXPECT_EQ(unknown.code(), StatusCode::kUnknownHandle);
  EXPECT_EQ(unknown.message(), "unknown handle " + std::to_string(h) + " (never issued, or already waited on)");
}

TEST(HandleTable, BoundedWaitTimesOutAndKeepsTheHandle) {
  HandleTable t;
  const int64_t h = t.create();
  EXPECT_EQ(t.wait(h, 0.01, nullptr).code(), StatusCode::kTimeout);
  t.complete(h, Status::OK(), Output());
  EXPECT_TRUE(t.wait(h, 0.01, nullptr).ok());
}

TEST(HandleTable, AnOpEndsOnceItsCallbackFirstAndALaterEndIsIgnored) {
  HandleTable t;
  std::vector<std::string> seen;
  const int64_t h = t.create([&](const Status& s) {
    // The waiter has not been woken yet: the callback runs before the op counts as done.
    seen.push_back(s.message() + (t.poll(h).has_value() ? " after" : " before"));
  });
  t.complete(h, Status::Aborted("peer lost"), Output());
  t.complete(h, Status::OK(), Output());  // the engine, later: ignored
  EXPECT_EQ(seen, (std::vector<std::string>{"peer lost before"}));
  EXPECT_EQ(t.wait(h, -1, nullptr).message(), "peer lost");
}

TEST(HandleTable, FailPendingEndsEveryOpInFlightAndOnlyThose) {
  HandleTable t;
  int callbacks = 0;
  const int64_t a = t.create([&](const Status&) { ++callbacks; });
  const int64_t b = t.create({}, "grad.7");
  const int64_t c = t.create([&](const Status&) { ++callbacks; });
  t.complete(c, Status::OK(), Output());
  const int64_t rejected = t.create_done(Status::InvalidArgument("bad"));
  std::thread waiter([&] { EXPECT_EQ(t.wait(b, -1, nullptr).message(), "tensor 'grad.7' did not run: rank 1 lost"); });
  EXPECT_EQ(t.fail_pending(Status::Aborted("rank 1 lost")), 2u);
  waiter.join();
  EXPECT_EQ(callbacks, 2);
  EXPECT_EQ(t.wait(a, -1, nullptr).code(), StatusCode::kAborted);
  EXPECT_TRUE(t.wait(c, -1, nullptr).ok());
  EXPECT_EQ(t.wait(rejected, -1, nullptr).code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(t.fail_pending(Status::Aborted("again")), 0u);
}

TEST(HandleTable, AHandleHandedOverAtLaunchStillRunsItsCallbackWhenTheOpEnds) {
  HandleTable t;
  bool called = false;
  const int64_t h = t.create([&](const Status&) { called = true; });
  auto event = std::make_shared<int>(1);
  t.launched(h, event, Output());
  std::shared_ptr<void> done_event;
  ASSERT_TRUE(t.wait_launched(h, &done_event, nullptr).ok());
  EXPECT_EQ(done_event, event);
  EXPECT_EQ(t.size(), 1u);  // kept for its callback
  t.complete(h, Status::OK(), Output());
  EXPECT_TRUE(called);
  EXPECT_EQ(t.size(), 0u);
}

}  // namespace
}  // namespace kolo
