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

// An engine as an op's waiter sees it: records each drive, and ends the op as its cycles would.
class RecordingDriver : public OpDriver {
 public:
  explicit RecordingDriver(HandleTable* table) : table_(table) {}
  void drive_waited(int64_t handle, bool until_launched) override {
    drives.push_back({handle, until_launched, std::this_thread::get_id()});
    if (until_launched) {
      table_->launched(handle, std::make_shared<int>(7), Output());
    } else {
      table_->complete(handle, Status::OK(), Output());
    }
  }
  struct Drive {
    int64_t handle;
    bool until_launched;
    std::thread::id thread;
  };
  std::vector<Drive> drives;

 private:
  HandleTable* table_;
};

TEST(HandleTable, AWaitWithoutALimitLetsTheOpsDriverRunItOnTheWaitingThread) {
  HandleTable t;
  auto driver = std::make_shared<RecordingDriver>(&t);
  const int64_t h = t.create({}, "a", driver);
  EXPECT_TRUE(t.wait(h, -1, nullptr).ok());
  ASSERT_EQ(driver->drives.size(), 1u);
  EXPECT_EQ(driver->drives[0].handle, h);
  EXPECT_FALSE(driver->drives[0].until_launched);
  EXPECT_EQ(driver->drives[0].thread, std::this_thread::get_id());
  // wait_launched drives until the work is launched, and hands its event over.
  const int64_t l = t.create({}, "b", driver);
  std::shared_ptr<void> event;
  EXPECT_TRUE(t.wait_launched(l, &event, nullptr).ok());
  ASSERT_EQ(driver->drives.size(), 2u);
  EXPECT_TRUE(driver->drives[1].until_launched);
  ASSERT_NE(event, nullptr);
  EXPECT_EQ(*static_cast<int*>(event.get()), 7);
  t.complete(l, Status::OK(), Output());  // its end, later, finds nobody waiting
  EXPECT_EQ(t.size(), 0u);
}

TEST(HandleTable, NothingDrivesABoundedWaitAnEndedOpOrAnOpWhoseEngineIsGone) {
  HandleTable t;
  auto driver = std::make_shared<RecordingDriver>(&t);
  const int64_t bounded = t.create({}, "bounded", driver);
  EXPECT_EQ(t.wait(bounded, 0.01, nullptr).code(), StatusCode::kTimeout);
  const int64_t ended = t.create({}, "ended", driver);
  t.complete(ended, Status::Aborted("over"), Output());
  EXPECT_EQ(t.wait(ended, -1, nullptr).code(), StatusCode::kAborted);
  EXPECT_TRUE(driver->drives.empty());
  // An engine shut down since: the op is ended by whoever ends it (here, another thread).
  std::weak_ptr<RecordingDriver> gone;
  int64_t orphan = 0;
  {
    auto short_lived = std::make_shared<RecordingDriver>(&t);
    orphan = t.create({}, "orphan", short_lived);
    gone = short_lived;
  }
  EXPECT_TRUE(gone.expired());
  std::thread ender([&] { t.complete(orphan, Status::OK(), Output()); });
  EXPECT_TRUE(t.wait(orphan, -1, nullptr).ok());
  ender.join();
  t.complete(bounded, Status::OK(), Output());
  EXPECT_TRUE(t.wait(bounded, 0.01, nullptr).ok());
  EXPECT_TRUE(driver->drives.empty());
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
