#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
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

// Pushes an op of `name` with `handle`, announced as `announce` says (kWake: an async op's push; kQuiet:
// a blocking one's).
void push(TensorQueue* q, const std::string& name, int64_t handle, TensorQueue::Announce announce) {
  auto e = entry(name);
  e->handle = handle;
  ASSERT_TRUE(q->push(std::move(e), announce).ok());
}

constexpr TensorQueue::Announce kWake = TensorQueue::Announce::kWake, kQuiet = TensorQueue::Announce::kQuiet,
                                kSoon = TensorQueue::Announce::kSoon;

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
  push(&q, "a", 1, kWake);  // an async op: it wakes kolo's thread
  drivers = 1;
  push(&q, "b", 2, kQuiet);  // a blocking one: its caller drives
  EXPECT_EQ(q.in_flight(), 2u);
  EXPECT_FALSE(q.only(2));
  // While the caller drives, kolo's thread takes nothing: the caller's cycle takes both.
  EXPECT_EQ(q.take_new_unless_driven(&fresh, drivers), TensorQueue::kLeftToCaller);
  ASSERT_EQ(q.take_new(&fresh), 2u);
  EXPECT_EQ(fresh[0].name, "a");
  EXPECT_EQ(fresh[1].name, "b");
  // A caller that has left (drivers back to 0) leaves its op to kolo's thread.
  push(&q, "c", 3, kQuiet);
  drivers = 0;
  ASSERT_EQ(q.take_new_unless_driven(&fresh, drivers), 1u);
  EXPECT_EQ(fresh[0].name, "c");
  ASSERT_NE(q.remove("a"), nullptr);
  ASSERT_NE(q.remove("b"), nullptr);
  EXPECT_TRUE(q.only(3));
  EXPECT_EQ(q.in_flight(), 1u);
}

TEST(TensorQueue, AnAsyncOpsWaiterTakesItOverUntilKolosThreadHasTakenItUp) {
  TensorQueue q;
  std::atomic<int> drivers{0};
  std::vector<Request> fresh;
  push(&q, "a", 1, kWake);  // an async op: it wakes kolo's thread
  // Its waiter counts itself a driver and takes it over: kolo's thread is not woken for it any more,
  // nor takes it up.
  drivers = 1;
  EXPECT_TRUE(q.leave_new_to_caller());
  EXPECT_FALSE(q.wait_for_work(0.0));
  EXPECT_EQ(q.take_new_unless_driven(&fresh, drivers), TensorQueue::kLeftToCaller);
  ASSERT_EQ(q.take_new(&fresh), 1u);  // the waiter's cycle
  EXPECT_EQ(fresh[0].name, "a");
  // Taken up by a cycle already: nothing is left for the next waiter to take over.
  drivers = 0;
  push(&q, "b", 2, kWake);
  ASSERT_EQ(q.take_new_unless_driven(&fresh, drivers), 1u);  // kolo's thread's cycle
  EXPECT_FALSE(q.leave_new_to_caller());
  EXPECT_EQ(q.in_flight(), 2u);
}

TEST(TensorQueue, ASoonPushIsLeftForItsWaitUntilItsTimeThenAnnounced) {
  TensorQueue q;
  q.set_soon_seconds(0.2);
  std::vector<Request> fresh;
  const double pushed = steady_seconds();
  push(&q, "a", 1, kSoon);  // kolo's thread is awake (not in a wait): it will look in time
  EXPECT_FALSE(q.wait_for_work(0.0));
  // No wait came for it: kolo's thread takes it up once its time has come.
  EXPECT_TRUE(q.wait_for_work(30.0));
  EXPECT_GE(steady_seconds() - pushed, 0.2);
  ASSERT_EQ(q.take_new(&fresh), 1u);
  EXPECT_EQ(fresh[0].name, "a");
  // One its waiter takes over is not announced at all.
  push(&q, "b", 2, kSoon);
  EXPECT_TRUE(q.leave_new_to_caller());
  EXPECT_FALSE(q.wait_for_work(0.4));
  ASSERT_EQ(q.take_new(&fresh), 1u);
  EXPECT_EQ(fresh[0].name, "b");
}

// kolo's thread waiting up to a minute for work, which it must find; *woke is when it did.
std::thread kolos_thread_waiting(TensorQueue* q, std::atomic<double>* woke) {
  return std::thread([q, woke] {
    EXPECT_TRUE(q->wait_for_work(60.0));
    *woke = steady_seconds();
  });
}

TEST(TensorQueue, ASoonPushWakesKolosThreadFromALongSleepButNotFromANap) {
  TensorQueue q;
  q.set_soon_seconds(20.0);
  std::vector<Request> fresh;
  std::atomic<double> woke{0};
  // Before any soon push, kolo's thread sleeps as long as it is told to: a soon push wakes it, as any push.
  std::thread sleeper = kolos_thread_waiting(&q, &woke);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  const double pushed = steady_seconds();
  push(&q, "a", 1, kSoon);
  sleeper.join();
  EXPECT_LT(woke - pushed, 10.0);
  ASSERT_EQ(q.take_new(&fresh), 1u);
  // After soon pushes close together it sleeps in naps, the first of soon_seconds: a soon push meanwhile is
  // left for its wait, and announced only once its time has come.
  q.set_soon_seconds(0.05);
  push(&q, "b", 2, kSoon);  // right after "a"; left for its wait (kolo's thread is awake): naps of 50 ms
  ASSERT_EQ(q.take_new(&fresh), 1u);
  ASSERT_NE(q.remove("b"), nullptr);
  std::thread napper = kolos_thread_waiting(&q, &woke);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  const double pushed_again = steady_seconds();
  push(&q, "b", 2, kSoon);
  napper.join();
  EXPECT_GE(woke - pushed_again, 0.05);
  ASSERT_EQ(q.take_new(&fresh), 1u);
  EXPECT_EQ(fresh[0].name, "b");
}

TEST(TensorQueue, WithoutSoonSecondsASoonPushWakesKolosThread) {
  TensorQueue q;
  push(&q, "a", 1, kSoon);
  EXPECT_TRUE(q.wait_for_work(0.0));
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
