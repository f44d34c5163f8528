#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
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
  EXPECT_EQ(q.close("stopped", StatusCode::kAborted).size(), 2u);
  Status s = q.push(entry("c"));
  EXPECT_EQ(s.code(), StatusCode::kAborted);
  EXPECT_EQ(s.message(), "tensor 'c' did not run: stopped");
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

}  // namespace
}  // namespace kolo
