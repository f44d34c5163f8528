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
  // The C ABI refuses at once, returning the status, with no handle.
  kolo_handle ch = 5;
  EXPECT_EQ(kolo_barrier(nullptr, &ch), KOLO_NOT_INITIALIZED);
  EXPECT_EQ(ch, 0);
  EXPECT_STREQ(kolo_last_error(), "barrier of tensor 'barrier': kolo is not initialized: call init() first");
  int64_t shape[1] = {2};
  kolo_tensor t = {x, KOLO_FLOAT32, 1, shape, nullptr, KOLO_CPU, 0, nullptr};
  kolo_op_options o;
  kolo_op_options_init(&o);
  o.name = "early.c";
  EXPECT_EQ(kolo_allreduce(&t, &t, &o, &ch), KOLO_NOT_INITIALIZED);
  EXPECT_STREQ(kolo_last_error(), "allreduce of tensor 'early.c': kolo is not initialized: call init() first");
  o.blocking = 1;
  kolo_output* c_out = reinterpret_cast<kolo_output*>(0x1);  // overwritten: no output
  o.output = &c_out;
  EXPECT_EQ(kolo_allgather(&t, &o, nullptr), KOLO_NOT_INITIALIZED);
  EXPECT_EQ(c_out, nullptr);
  EXPECT_STREQ(kolo_last_error(), "allgather of tensor 'early.c': kolo is not initialized: call init() first");
  EXPECT_EQ(kolo_join(nullptr, &ch), KOLO_NOT_INITIALIZED);
  EXPECT_STREQ(kolo_last_error(), "join of tensor 'join': kolo is not initialized: call init() first");
}

// Handles kolo never issued: a status of their own (the C ABI's KOLO_UNKNOWN_HANDLE).
TEST(BeforeInit, UnknownHandle) {
  EXPECT_EQ(wait(Handle(987654321)).code(), StatusCode::kUnknownHandle);
  EXPECT_EQ(kolo_wait(987654321, -1, nullptr), KOLO_UNKNOWN_HANDLE);
  EXPECT_STREQ(kolo_last_error(), "unknown handle 987654321 (never issued, or already waited on)");
  EXPECT_EQ(kolo_poll(987654321), -1);
  EXPECT_EQ(kolo_abi_version(), 2);
  EXPECT_EQ(kolo_abi_version(), KOLO_C_API_VERSION);
}

}  // namespace
}  // namespace kolo
