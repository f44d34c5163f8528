// CycleTurns' rules (engine/cycle_turns.h): kolo's thread runs no cycle while a caller holds a turn, and a turn
// ended with ops waiting on peers defers its next cycle once.
#include <gtest/gtest.h>

#include <thread>

#include "engine/cycle_turns.h"

namespace kolo {
namespace {

using Left = CycleTurns::Left;
using Next = CycleTurns::Next;

TEST(CycleTurns, TheThreadCyclesOnlyWhenNoCallerHoldsATurn) {
  CycleTurns turns;
  EXPECT_EQ(turns.next_for_thread(), Next::kThread);
  turns.claim();
  turns.claim();
  EXPECT_EQ(turns.next_for_thread(), Next::kCaller);
  EXPECT_EQ(turns.callers().load(), 2);
  turns.unclaim();
  EXPECT_EQ(turns.next_for_thread(), Next::kCaller);
  EXPECT_FALSE(turns.end_turn(Left::kNothing));  // nothing left: the thread is not woken
  EXPECT_FALSE(turns.claimed());
  EXPECT_EQ(turns.next_for_thread(), Next::kThread);
}

TEST(CycleTurns, OpsLeftWaitingOnPeersDeferTheThreadsNextCycleOnce) {
  CycleTurns turns;
  turns.claim();
  EXPECT_TRUE(turns.end_turn(Left::kPeersAwaited));
  EXPECT_EQ(turns.next_for_thread(), Next::kLater);
  EXPECT_EQ(turns.next_for_thread(), Next::kThread);
  turns.claim();
  EXPECT_TRUE(turns.end_turn(Left::kWork));  // woken, and at once
  EXPECT_EQ(turns.next_for_thread(), Next::kThread);
}

TEST(CycleTurns, InsideACycleIsTheThreadsOwn) {
  CycleTurns turns;
  EXPECT_FALSE(CycleTurns::in_cycle());
  {
    const CycleTurns::Cycle cycle;
    const CycleTurns::CallerCycle caller(&turns);
    EXPECT_TRUE(CycleTurns::in_cycle());
    EXPECT_TRUE(turns.caller_in_cycle());
    bool other_thread_in_cycle = true;
    std::thread([&] { other_thread_in_cycle = CycleTurns::in_cycle(); }).join();
    EXPECT_FALSE(other_thread_in_cycle);
  }
  EXPECT_FALSE(CycleTurns::in_cycle());
  EXPECT_FALSE(turns.caller_in_cycle());
}

}  // namespace
}  // namespace kolo
