#include <gtest/gtest.h>

#include <thread>

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
  EXPECT_EQ(q.take_new().size(), 1u);
  EXPECT_TRUE(q.take_new().empty());
  ASSERT_NE(q.remove("a"), nullptr);
  EXPECT_TRUE(q.push(entry("a")).ok());
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

TEST(HandleTable, WaitReturnsTheStatusOnceAndReleases) {
  HandleTable t;
  const int64_t h = t.create();
  EXPECT_FALSE(t.poll(h).has_value());
  std::thread done([&] { t.complete(h, Status::Mismatch("no"), Output()); });
  Status s = t.wait(h, -1, nullptr);
  done.join();
  EXPECT_EQ(s.code(), StatusCode::kMismatch);
  EXPECT_EQ(t.size(), 0u);
  EXPECT_EQ(t.wait(h, -1, nullptr).message(), "unknown handle " + std::to_string(h) + " (never issued, or already waited on)");
}

TEST(HandleTable, BoundedWaitTimesOutAndKeepsTheHandle) {
  HandleTable t;
  const int64_t h = t.create();
  EXPECT_EQ(t.wait(h, 0.01, nullptr).code(), StatusCode::kTimeout);
  t.complete(h, Status::OK(), Output());
  EXPECT_TRUE(t.wait(h, 0.01, nullptr).ok());
}

}  // namespace
}  // namespace kolo
