// The C ABI (kolo/c_api.h): each op through its one entry point and a kolo_op_options, exact values;
// the options' sizes; refusals as a status at once, with no handle; unknown handles; the ABI version.
#include <gtest/gtest.h>

#include <cstddef>
#include <string>
#include <vector>

#include "kolo/c_api.h"
#include "mpi_test_util.h"

namespace kolo {
namespace {

kolo_tensor c_tensor(void* data, int32_t dtype, const int64_t* shape, int32_t ndim = 1) {
  return kolo_tensor{data, dtype, ndim, shape, nullptr, KOLO_CPU, 0, nullptr};
}

kolo_op_options named(const char* name) {
  kolo_op_options o;
  kolo_op_options_init(&o);
  o.name = name;
  return o;
}

// Enqueues with `start(&handle)` and waits; the op's output (may be null).
template <typename Start>
kolo_output* run_async(Start start) {
  kolo_handle h = 0;
  EXPECT_EQ(start(&h), KOLO_OK) << kolo_last_error();
  EXPECT_GT(h, 0);
  kolo_output* out = nullptr;
  EXPECT_EQ(kolo_wait(h, 30.0, &out), KOLO_OK) << kolo_last_error();
  return out;
}

TEST(CApi, VersionAndDefaults) {
  EXPECT_EQ(kolo_abi_version(), KOLO_C_API_VERSION);
  EXPECT_EQ(kolo_abi_version(), 2);
  kolo_op_options o;
  kolo_op_options_init(&o);
  EXPECT_EQ(o.struct_size, sizeof(kolo_op_options));
  EXPECT_EQ(o.process_set, 0);
  EXPECT_EQ(o.name, nullptr);
  EXPECT_EQ(o.blocking, 0);
  EXPECT_EQ(o.reduce_op, KOLO_AVERAGE);
  EXPECT_EQ(o.prescale_factor, 1.0);
  EXPECT_EQ(o.postscale_factor, 1.0);
  EXPECT_EQ(o.compression, KOLO_COMPRESSION_NONE);
  EXPECT_EQ(o.root_rank, 0);
  EXPECT_EQ(o.splits, nullptr);
  EXPECT_EQ(o.num_splits, 0);
  EXPECT_EQ(o.allocate, nullptr);
  EXPECT_EQ(o.done, nullptr);
  EXPECT_EQ(o.output, nullptr);
}

TEST(CApi, Allreduce) {
  const int n = size();
  const int64_t shape[1] = {3};
  float data[3] = {1.0f, 2.0f, 3.0f};
  kolo_tensor t = c_tensor(data, KOLO_FLOAT32, shape);
  kolo_op_options o = named("c.ar");
  o.reduce_op = KOLO_SUM;
  o.postscale_factor = 2.0;
  kolo_output_free(run_async([&](kolo_handle* h) { return kolo_allreduce(&t, &t, &o, h); }));
  EXPECT_EQ(data[0], 2.0f * n);
  EXPECT_EQ(data[1], 4.0f * n);
  EXPECT_EQ(data[2], 6.0f * n);
  // Blocking, with the default op (an average) and a done callback, into another tensor.
  float in[2] = {static_cast<float>(rank()), 1.0f}, out[2] = {-1.0f, -1.0f};
  kolo_tensor ti = c_tensor(in, KOLO_FLOAT32, shape), to = c_tensor(out, KOLO_FLOAT32, shape);
  const int64_t two[1] = {2};
  ti.shape = two;
  to.shape = two;
  kolo_op_options b = named("c.ar.blocking");
  b.blocking = 1;
  int calls = 0;
  b.done = [](void* count, int32_t code, const char*) { *static_cast<int*>(count) += code == KOLO_OK ? 1 : 100; };
  b.done_data = &calls;
  ASSERT_EQ(kolo_allreduce(&ti, &to, &b, nullptr), KOLO_OK) << kolo_last_error();
  EXPECT_EQ(out[0], (n - 1) / 2.0f);
  EXPECT_EQ(out[1], 1.0f);
  EXPECT_EQ(calls, 1);
}

void* into_vector(void* data, int32_t ndim, const int64_t* shape) {
  auto* v = static_cast<std::vector<int32_t>*>(data);
  int64_t count = 1;
  for (int32_t d = 0; d < ndim; ++d) count *= shape[d];
  v->assign(static_cast<size_t>(count), -1);
  return v->data();
}

TEST(CApi, Allgather) {
  const int n = size();
  const int64_t one[1] = {1};
  int32_t mine = rank() * 10;
  kolo_tensor g = c_tensor(&mine, KOLO_INT32, one);
  kolo_op_options o = named("c.ag");
  kolo_output* out = run_async([&](kolo_handle* h) { return kolo_allgather(&g, &o, h); });
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(kolo_output_ndim(out), 1);
  ASSERT_EQ(kolo_output_shape(out)[0], n);
  for (int r = 0; r < n; ++r) EXPECT_EQ(static_cast<int32_t*>(kolo_output_data(out))[r], 10 * r);
  kolo_output_free(out);
  // Blocking, into memory the caller's allocator gives.
  std::vector<int32_t> gathered;
  kolo_op_options b = named("c.ag.mine");
  b.blocking = 1;
  b.allocate = into_vector;
  b.allocate_data = &gathered;
  kolo_output* shape_only = nullptr;
  b.output = &shape_only;
  ASSERT_EQ(kolo_allgather(&g, &b, nullptr), KOLO_OK) << kolo_last_error();
  ASSERT_NE(shape_only, nullptr);
  EXPECT_EQ(kolo_output_shape(shape_only)[0], n);
  kolo_output_free(shape_only);
  std::vector<int32_t> expected;
  for (int r = 0; r < n; ++r) expected.push_back(10 * r);
  EXPECT_EQ(gathered, expected);
}

TEST(CApi, BroadcastFromTheLastRank) {
  const int n = size();
  const int64_t two[1] = {2};
  double data[2] = {1.0 * rank(), rank() + 0.5};
  kolo_tensor t = c_tensor(data, KOLO_FLOAT64, two);
  kolo_op_options o = named("c.bc");
  o.root_rank = n - 1;
  kolo_output_free(run_async([&](kolo_handle* h) { return kolo_broadcast(&t, &t, &o, h); }));
  EXPECT_EQ(data[0], n - 1.0);
  EXPECT_EQ(data[1], n - 0.5);
}

// Rank r sends j + 1 rows to rank j, each worth 100 r + j.
TEST(CApi, AlltoallWithSplits) {
  const int n = size(), me = rank();
  std::vector<int64_t> splits;
  std::vector<int32_t> rows;
  for (int j = 0; j < n; ++j) {
    splits.push_back(j + 1);
    for (int k = 0; k <= j; ++k) rows.push_back(100 * me + j);
  }
  const int64_t shape[1] = {static_cast<int64_t>(rows.size())};
  kolo_tensor t = c_tensor(rows.data(), KOLO_INT32, shape);
  kolo_op_options o = named("c.a2a");
  o.splits = splits.data();
  o.num_splits = n;
  kolo_output* out = run_async([&](kolo_handle* h) { return kolo_alltoall(&t, &o, h); });
  ASSERT_NE(out, nullptr);
  ASSERT_EQ(kolo_output_shape(out)[0], n * (me + 1));
  ASSERT_EQ(kolo_output_num_received_splits(out), n);
  const auto* got = static_cast<const int32_t*>(kolo_output_data(out));
  for (int s = 0; s < n; ++s) {
    EXPECT_EQ(kolo_output_received_splits(out)[s], me + 1);
    for (int k = 0; k <= me; ++k) EXPECT_EQ(got[s * (me + 1) + k], 100 * s + me) << "from rank " << s;
  }
  kolo_output_free(out);
}

// 2n + 1 rows worth k + r on rank r: rank r keeps its block of the sums n k + n (n - 1) / 2.
TEST(CApi, Reducescatter) {
  const int n = size(), me = rank();
  const int64_t total = 2 * n + 1;
  std::vector<float> in;
  for (int64_t k = 0; k < total; ++k) in.push_back(static_cast<float>(k + me));
  int64_t offset = 0;
  for (int r = 0; r < me; ++r) offset += kolo_reducescatter_rows(total, r, n);
  const int64_t rows = kolo_reducescatter_rows(total, me, n);
  EXPECT_EQ(rows, me == 0 ? 3 : 2);
  std::vector<float> out(static_cast<size_t>(rows), -1.0f);
  const int64_t in_shape[1] = {total}, out_shape[1] = {rows};
  kolo_tensor ti = c_tensor(in.data(), KOLO_FLOAT32, in_shape), to = c_tensor(out.data(), KOLO_FLOAT32, out_shape);
  kolo_op_options o = named("c.rs");
  o.reduce_op = KOLO_SUM;
  o.compression = KOLO_COMPRESSION_FP16;  // an allreduce's only: reducescatter ignores it
  kolo_output_free(run_async([&](kolo_handle* h) { return kolo_reducescatter(&ti, &to, &o, h); }));
  for (int64_t k = 0; k < rows; ++k) {
    EXPECT_EQ(out[static_cast<size_t>(k)], static_cast<float>(n * (offset + k) + n * (n - 1) / 2)) << "row " << k;
  }
}

TEST(CApi, BarrierAndJoin) {
  kolo_output_free(run_async([](kolo_handle* h) { return kolo_barrier(nullptr, h); }));
  kolo_op_options b;
  kolo_op_options_init(&b);
  b.blocking = 1;
  ASSERT_EQ(kolo_barrier(&b, nullptr), KOLO_OK) << kolo_last_error();
  // Ranks but 0 join at once; rank 0 allreduces alone (the joined ranks give zeros), then joins last.
  kolo_handle joined = 0;
  if (rank() != 0) {
    ASSERT_EQ(kolo_join(nullptr, &joined), KOLO_OK) << kolo_last_error();
  } else {
    float x[1] = {5.0f};
    const int64_t one[1] = {1};
    kolo_tensor t = c_tensor(x, KOLO_FLOAT32, one);
    kolo_op_options o = named("c.join.ar");
    o.reduce_op = KOLO_SUM;
    o.blocking = 1;
    ASSERT_EQ(kolo_allreduce(&t, &t, &o, nullptr), KOLO_OK) << kolo_last_error();
    EXPECT_EQ(x[0], 5.0f);
    kolo_output* out = nullptr;
    kolo_op_options j;
    kolo_op_options_init(&j);
    j.blocking = 1;
    j.output = &out;
    ASSERT_EQ(kolo_join(&j, nullptr), KOLO_OK) << kolo_last_error();
    ASSERT_NE(out, nullptr);
    EXPECT_EQ(kolo_output_last_joined_rank(out), 0);
    kolo_output_free(out);
    return;
  }
  kolo_output* out = nullptr;
  ASSERT_EQ(kolo_wait(joined, 30.0, &out), KOLO_OK) << kolo_last_error();
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(kolo_output_last_joined_rank(out), 0);
  kolo_output_free(out);
}

// A struct from an older, smaller kolo.h: the fields it lacks take their defaults (here everything
// from compression on: the garbage past struct_size is not read).
TEST(CApi, SmallerOptionsStructTakesDefaultsForTheRest) {
  const int64_t one[1] = {1};
  float x[1] = {2.0f};
  kolo_tensor t = c_tensor(x, KOLO_FLOAT32, one);
  kolo_op_options o = named("c.small");
  o.reduce_op = KOLO_SUM;
  o.struct_size = offsetof(kolo_op_options, compression);
  o.compression = 12345;
  o.splits = reinterpret_cast<const int64_t*>(0x8);
  o.num_splits = -7;
  o.done = reinterpret_cast<kolo_done_fn>(0x10);
  kolo_output_free(run_async([&](kolo_handle* h) { return kolo_allreduce(&t, &t, &o, h); }));
  EXPECT_EQ(x[0], 2.0f * size());
}

TEST(CApi, RefusedAtOnceWithNoHandle) {
  const std::string on_rank = " on rank " + std::to_string(rank());
  const int64_t shape[1] = {3};
  float data[3] = {1.0f, 2.0f, 3.0f};
  kolo_tensor bad = c_tensor(data, 99, shape);
  kolo_op_options o = named("c.bad");
  kolo_handle h = 42;
  EXPECT_EQ(kolo_allreduce(&bad, &bad, &o, &h), KOLO_INVALID_ARGUMENT);
  EXPECT_EQ(h, 0);
  EXPECT_EQ(std::string(kolo_last_error()),
            "allreduce of tensor 'c.bad'" + on_rank +
                ": input has an unsupported dtype (99); kolo supports uint8, int8, uint16, int16, int32, int64, float16, "
                "bfloat16, float32, float64, bool");
  h = 42;
  EXPECT_EQ(kolo_allgather(nullptr, &o, &h), KOLO_INVALID_ARGUMENT);
  EXPECT_EQ(h, 0);
  EXPECT_EQ(std::string(kolo_last_error()),
            "allgather of tensor 'c.bad'" + on_rank +
                ": input has an unsupported dtype (-1); kolo supports uint8, int8, uint16, int16, int32, int64, float16, "
                "bfloat16, float32, float64, bool");
  kolo_tensor t = c_tensor(data, KOLO_FLOAT32, shape);
  o.process_set = 12345;
  EXPECT_EQ(kolo_allreduce(&t, &t, &o, &h), KOLO_INVALID_ARGUMENT);
  EXPECT_EQ(h, 0);
  const std::string no_set = " on rank " + std::to_string(rank()) +
                             ": there is no process set 12345 (add_process_set makes one; removed sets are gone)";
  EXPECT_EQ(std::string(kolo_last_error()), "allreduce of tensor 'c.bad'" + no_set);
  o.blocking = 1;
  EXPECT_EQ(kolo_barrier(&o, nullptr), KOLO_INVALID_ARGUMENT);
  EXPECT_EQ(std::string(kolo_last_error()), "barrier of tensor 'barrier'" + no_set);
  EXPECT_EQ(kolo_join(&o, &h), KOLO_INVALID_ARGUMENT);
  EXPECT_STREQ(kolo_last_error(), "kolo_join: a join is among every rank: process_set must be 0, not 12345");
  o = named("c.nohandle");
  EXPECT_EQ(kolo_allreduce(&t, &t, &o, nullptr), KOLO_INVALID_ARGUMENT);
  EXPECT_STREQ(kolo_last_error(), "kolo_allreduce: handle is NULL (an op not blocking gives its handle there)");
  for (uint32_t bytes : {0u, 7u, static_cast<uint32_t>(sizeof(kolo_op_options) + 8)}) {
    o.struct_size = bytes;
    EXPECT_EQ(kolo_broadcast(&t, &t, &o, &h), KOLO_INVALID_ARGUMENT);
    EXPECT_EQ(h, 0);
    EXPECT_EQ(std::string(kolo_last_error()),
              "kolo_broadcast: kolo_op_options.struct_size is " + std::to_string(bytes) +
                  ", not a size this kolo takes (8 to " + std::to_string(sizeof(kolo_op_options)) +
                  "): set it with kolo_op_options_init");
  }
}

// A name in flight: refused at its queue, with no handle and no callback.
TEST(CApi, NameInFlightRefusedAtItsQueue) {
  if (size() < 2) GTEST_SKIP() << "needs a second rank to hold the first op in flight";
  const int64_t shape[1] = {3};
  float data[3] = {1.0f, 2.0f, 3.0f};
  kolo_tensor t = c_tensor(data, KOLO_FLOAT32, shape);
  kolo_op_options o = named("c.twice");
  o.reduce_op = KOLO_SUM;
  int calls = 0;
  o.done = [](void* count, int32_t, const char*) { ++*static_cast<int*>(count); };
  o.done_data = &calls;
  // Rank 0 submits twice before the others submit at all: the first stays in flight.
  kolo_handle first = 0, second = 42;
  if (rank() == 0) {
    ASSERT_EQ(kolo_allreduce(&t, &t, &o, &first), KOLO_OK) << kolo_last_error();
    EXPECT_EQ(kolo_allreduce(&t, &t, &o, &second), KOLO_INVALID_ARGUMENT);
    EXPECT_EQ(second, 0);
    EXPECT_STREQ(kolo_last_error(),
                 "tensor 'c.twice' is already in flight on rank 0: wait for it before submitting the name again");
  }
  kolo_op_options b;
  kolo_op_options_init(&b);
  b.blocking = 1;
  ASSERT_EQ(kolo_barrier(&b, nullptr), KOLO_OK) << kolo_last_error();
  if (rank() != 0) {
    ASSERT_EQ(kolo_allreduce(&t, &t, &o, &first), KOLO_OK) << kolo_last_error();
  }
  ASSERT_EQ(kolo_wait(first, 30.0, nullptr), KOLO_OK) << kolo_last_error();
  EXPECT_EQ(data[0], 1.0f * size());
  EXPECT_EQ(data[2], 3.0f * size());
  EXPECT_EQ(calls, 1);  // the first's, not the refused one's
}

TEST(CApi, UnknownHandle) {
  EXPECT_EQ(kolo_wait(123456789, -1, nullptr), KOLO_UNKNOWN_HANDLE);
  EXPECT_STREQ(kolo_last_error(), "unknown handle 123456789 (never issued, or already waited on)");
  EXPECT_EQ(kolo_wait_on_stream(123456789, nullptr, nullptr), KOLO_UNKNOWN_HANDLE);
  EXPECT_EQ(kolo_poll(123456789), -1);
  EXPECT_STREQ(kolo_last_error(), "unknown handle 123456789 (never issued, or already waited on)");
}

}  // namespace
}  // namespace kolo
