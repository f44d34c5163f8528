#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "engine/handle_table.h"

namespace kolo {
namespace {

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

TEST(HandleTable, AWaiterWatchingItsOpSeesAnotherOpEndAndWaitsOnForItsOwn) {
  // The waiter watches the table's ends before it sleeps: another op's end, within the watch or after it,
  // must neither end its wait nor be lost to that op's own waiter.
  HandleTable t;
  const int64_t mine = t.create(), other = t.create();
  std::atomic<bool> waiting{false};
  std::thread ends([&] {
    while (!waiting) std::this_thread::yield();
    t.complete(other, Status::Mismatch("other"), Output());  // most likely within the watch
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    EXPECT_FALSE(t.poll(mine).has_value());
    t.complete(mine, Status::Aborted("mine"), Output());  // after it: through the condition variable
  });
  waiting = true;
  const Status s = t.wait(mine, -1, nullptr);
  ends.join();
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(s.message(), "mine");
  const Status o = t.wait(other, 0, nullptr);
  EXPECT_EQ(o.code(), StatusCode::kMismatch);
  EXPECT_EQ(t.size(), 0u);
}

TEST(HandleTable, AnOpLaunchedWhileItsWaiterWatchesHandsItsEventOver) {
  HandleTable t;
  const int64_t h = t.create([](const Status&) {});
  std::thread launch([&] { t.launched(h, std::make_shared<int>(7), Output()); });
  std::shared_ptr<void> event;
  EXPECT_TRUE(t.wait_launched(h, &event, nullptr).ok());
  launch.join();
  ASSERT_NE(event, nullptr);
  EXPECT_EQ(*static_cast<int*>(event.get()), 7);
  t.complete(h, Status::OK(), Output());  // its callback runs; nobody waits
  EXPECT_EQ(t.size(), 0u);
}

// A stand-in for an engine: the table keeps it for the op's waiter and never calls it, so an alias of
// another object names one (never dereferenced) and ends with it.
std::shared_ptr<Engine> stand_in(const std::shared_ptr<int>& owner) {
  return std::shared_ptr<Engine>(owner, reinterpret_cast<Engine*>(owner.get()));
}

TEST(HandleTable, AnAsyncOpsEngineDrivesItUntilItEndsOrIsLaunched) {
  HandleTable t;
  auto owner = std::make_shared<int>(0);
  const std::shared_ptr<Engine> engine = stand_in(owner);
  const int64_t pending = t.create({}, "pending", engine);
  EXPECT_EQ(t.driver(pending), engine);
  // A blocking call's op (created without its engine: its caller drives it) and an unknown handle: none.
  const int64_t blocking = t.create({}, "blocking");
  EXPECT_EQ(t.driver(blocking), nullptr);
  EXPECT_EQ(t.driver(12345), nullptr);
  // Launched: its device work runs, and a waiter waits on its event.
  const int64_t launched = t.create({}, "launched", engine);
  t.launched(launched, std::make_shared<int>(7), Output());
  EXPECT_EQ(t.driver(launched), nullptr);
  // Ended.
  t.complete(pending, Status::OK(), Output());
  EXPECT_EQ(t.driver(pending), nullptr);
  EXPECT_TRUE(t.wait(pending, -1, nullptr).ok());
  t.complete(blocking, Status::OK(), Output());
  EXPECT_TRUE(t.wait(blocking, -1, nullptr).ok());
  t.complete(launched, Status::OK(), Output());
  EXPECT_TRUE(t.wait(launched, -1, nullptr).ok());
}

TEST(HandleTable, AnOpWhoseEngineIsGoneHasNoDriverAndIsEndedByWhoeverEndsIt) {
  HandleTable t;
  auto owner = std::make_shared<int>(0);
  int64_t orphan = 0;
  {
    const std::shared_ptr<Engine> engine = stand_in(owner);
    orphan = t.create({}, "orphan", engine);
    EXPECT_EQ(t.driver(orphan), engine);
  }
  owner.reset();  // the engine shut down
  EXPECT_EQ(t.driver(orphan), nullptr);
  std::thread ender([&] { t.complete(orphan, Status::Aborted("shut down"), Output()); });
  EXPECT_EQ(t.wait(orphan, -1, nullptr).code(), StatusCode::kAborted);
  ender.join();
  EXPECT_EQ(t.size(), 0u);
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
