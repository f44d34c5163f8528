#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "engine/engine_life.h"

namespace kolo {
namespace {

TEST(EngineLife, AStopAnEndOrAnAbandonmentEachEndCallersCycles) {
  EngineLife stopping, ended, abandoned;
  for (EngineLife* life : {&stopping, &ended, &abandoned}) {
    life->started();
    EXPECT_FALSE(life->over());
    EXPECT_TRUE(life->refusal().ok());
  }
  stopping.ask_stop();
  ended.end();
  abandoned.abandon(Status(StatusCode::kPeersFailed, "rank 1 lost"));
  EXPECT_TRUE(stopping.over() && stopping.stop_asked() && !stopping.ended() && !stopping.abandoned());
  EXPECT_TRUE(ended.over() && ended.ended() && !ended.stop_asked() && !ended.abandoned());
  EXPECT_TRUE(abandoned.over() && abandoned.abandoned() && !abandoned.ended() && !abandoned.stop_asked());
  // Only an abandoned engine refuses pushes (an ended one fails them through its queue), with its reason.
  EXPECT_TRUE(stopping.refusal().ok());
  EXPECT_TRUE(ended.refusal().ok());
  EXPECT_EQ(abandoned.refusal().code(), StatusCode::kPeersFailed);
  EXPECT_EQ(abandoned.refusal().message(), "rank 1 lost");
  EXPECT_TRUE(abandoned.running());  // its thread may be stuck in MPI: it has not ended
}

TEST(EngineLife, WaitsForTheThreadReturnWhenItEndsOrIsAbandoned) {
  EngineLife life;
  life.started();
  EXPECT_FALSE(life.wait_ended(0.01));
  std::thread thread([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    life.thread_ended();
  });
  life.wait_ended_or_abandoned();
  EXPECT_FALSE(life.running());
  EXPECT_TRUE(life.wait_ended(0));
  thread.join();

  EngineLife stuck;
  stuck.started();
  std::thread abandoner([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    stuck.abandon(Status::Aborted("peer lost"));
  });
  stuck.wait_ended_or_abandoned();  // returns though the thread never ends
  EXPECT_TRUE(stuck.running());
  EXPECT_FALSE(stuck.wait_ended(0.01));
  abandoner.join();
}

}  // namespace
}  // namespace kolo
