// Every op before init() fails at once with a clear message, and enqueues nothing.
#include <gtest/gtest.h>

#include "kolo/c_api.h"
#include "kolo/kolo.h"

namespace kolo {
namespace {

TEST(BeforeInit, OpsFailAtOnceNamingTheTensor) {
  ASSERT_FALSE(is_initialized());
  EXPECT_EQ(rank(), -1);
  EXPECT_EQ(size(), -1);
  float x[2] = {1, 2};
  Handle h = allreduce_async("early", cpu_view(x, {2}), cpu_view(x, {2}));
  ASSERT_TRUE(poll(h).has_value());
  Status s = wait(h);
  EXPECT_EQ(s.code(), StatusCode::kNotInitialized);
  EXPECT_EQ(s.message(), "allreduce of tensor 'early': kolo is not initialized: call init() first");
  Output out;
  EXPECT_EQ(allgather("early.gather", cpu_view(x, {2}), &out).message(),
            "allgather of tensor 'early.gather': kolo is not initialized: call init() first");
  EXPECT_EQ(barrier().code(), StatusCode::kNotInitialized);
  EXPECT_EQ(kolo_wait(kolo_barrier_async(nullptr, nullptr), -1, nullptr), KOLO_NOT_INITIALIZED);
  EXPECT_STREQ(kolo_last_error(), "barrier of tensor 'barrier': kolo is not initialized: call init() first");
}

}  // namespace
}  // namespace kolo
