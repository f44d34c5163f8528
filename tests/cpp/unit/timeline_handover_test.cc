#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <thread>

#include "engine/timeline_handover.h"

namespace kolo {
namespace {

std::unique_ptr<Timeline> open_timeline(const std::string& path) {
  std::unique_ptr<Timeline> t;
  EXPECT_TRUE(Timeline::open(path, 0, &t).ok());
  return t;
}

TEST(TimelineHandover, TheAskerReturnsOnceTheEngineThreadTookTheLastTimelineHandedOver) {
  TimelineHandover handover;
  int takes = 0;
  handover.take_if_handed([&](std::unique_ptr<Timeline>, bool) { ++takes; });
  EXPECT_EQ(takes, 0);  // nothing handed over
  const std::string path = testing::TempDir() + "/kolo_handover_test.json";
  std::atomic<bool> returned{false};
  std::thread asker([&] {
    const uint64_t ticket = handover.ask(open_timeline(path), true);
    EXPECT_EQ(ticket, 1u);
    handover.wait_taken(ticket);
    returned = true;
  });
  std::unique_ptr<Timeline> taken;
  bool marks = false;
  while (taken == nullptr) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    EXPECT_FALSE(returned);  // not before the engine thread took it
    handover.take_if_handed([&](std::unique_ptr<Timeline> t, bool mark_cycles) {
      taken = std::move(t);
      marks = mark_cycles;
      ++takes;
    });
  }
  asker.join();
  EXPECT_TRUE(returned);
  EXPECT_TRUE(marks);
  EXPECT_EQ(takes, 1);
  handover.take_if_handed([&](std::unique_ptr<Timeline>, bool) { ++takes; });
  EXPECT_EQ(takes, 1);  // taken once
  taken->close();
  std::remove(path.c_str());
}

TEST(TimelineHandover, ClosingReleasesTheAskerAndLaterAsksReturnAtOnce) {
  TimelineHandover handover;
  std::thread asker([&] { handover.wait_taken(handover.ask(nullptr, false)); });
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  handover.close();  // the engine thread ended: it will never take this one
  asker.join();
  EXPECT_EQ(handover.ask(nullptr, false), 0u);  // nothing to wait for
  handover.wait_taken(0);                       // returns at once
}

}  // namespace
}  // namespace kolo
