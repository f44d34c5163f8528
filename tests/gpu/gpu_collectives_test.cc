// Every collective on GPU tensors, every dtype, exact: each result is compared with the same op on
// CPU tensors (kolo's MPI path) in the same run, at whatever number of ranks mpirun started.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "gpu/gpu_test_util.h"

namespace kolo {
namespace {

using testing::Buffer;
using testing::DeviceTensor;
using testing::same_bytes;
using testing::ScopedSettings;

// Small integers: exact in every dtype, and their sums over 4 ranks fit int8 (as the CPU suite).
double value(size_t i, int r) { return static_cast<double>((i * 7 + static_cast<size_t>(r) * 3) % 6); }
// 1 or 2: products over 4 ranks stay at most 16.
double factor_value(size_t i, int r) { return 1.0 + static_cast<double>((i + static_cast<size_t>(r)) % 2); }

Buffer input_for(DataType dtype, std::vector<int64_t> shape, ReduceOp op, int seed = 0) {
  Buffer b(dtype, std::move(shape));
  for (size_t i = 0; i < b.size(); ++i) {
    b.set(i, op == ReduceOp::kProduct ? factor_value(i, rank() + seed) : value(i + static_cast<size_t>(seed), rank()));
  }
  return b;
}

// The allreduce of `in` on the CPU path, for comparison.
Buffer cpu_allreduce(const std::string& name, Buffer in, const AllreduceOptions& o) {
  Status s = allreduce("cpu." + name, in.view(), in.view(), o);
  EXPECT_TRUE(s.ok()) << s.message();
  return in;
}

const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

class GpuAllreduce : public ::testing::TestWithParam<DataType> {};

TEST_P(GpuAllreduce, EveryOpEverySizeInPlaceAndOutMatchesTheCpuPath) {
  const DataType dtype = GetParam();
  for (ReduceOp op : kOps) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{17}, int64_t{5000}}) {
      for (bool in_place : {true, false}) {
        const std::string name = std::string("ar.") + reduce_op_name(op) + "." + std::to_string(n) + (in_place ? ".in" : ".out");
        AllreduceOptions o;
        o.op = op;
        if (dtype_is_floating(dtype)) {
          o.prescale_factor = 0.5;
          o.postscale_factor = 3.0;
        }
        const Buffer host = input_for(dtype, {n}, op);
        DeviceTensor in(host), out(dtype, {n});
        Status s = allreduce(name, in.view(), in_place ? in.view() : out.view(), o);
        ASSERT_TRUE(s.ok()) << s.message();
        EXPECT_TRUE(same_bytes((in_place ? in : out).download(), cpu_allreduce(name, host, o))) << name;
        if (!in_place) {
          EXPECT_TRUE(same_bytes(in.download(), host)) << name << ": the input changed";
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GpuAllreduce, ::testing::ValuesIn(testing::all_dtypes()), testing::dtype_param_name);

// Adasum on GPU tensors (staged through the host Adasum): the CPU path's result, fused tensors each
// with their own coefficients, for every floating dtype. Not bit for bit: the dot products are summed
// over slices of the fused buffer, so a different fusion of the same tensors may round them apart.
TEST(GpuAdasum, FusedTensorsMatchTheCpuPath) {
  for (DataType dtype : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16, DataType::kBFloat16}) {
    std::vector<std::unique_ptr<DeviceTensor>> tensors;
    std::vector<Buffer> hosts;
    std::vector<Handle> handles;
    AllreduceOptions o;
    o.op = ReduceOp::kAdasum;
    for (int t = 0; t < 5; ++t) {
      Buffer host(dtype, {int64_t{37} * t + 3});
      for (size_t i = 0; i < host.size(); ++i) {
        host.set(i, std::sin(0.3 * static_cast<double>(i) + rank() + t) * (1 + rank()));
      }
      hosts.push_back(host);
      tensors.push_back(std::make_unique<DeviceTensor>(host));
    }
    const std::string tag = std::string("adasum.") + dtype_name(dtype) + ".";
    for (int t = 0; t < 5; ++t) {
      handles.push_back(allreduce_async(tag + std::to_string(t), tensors[t]->view(), tensors[t]->view(), o));
    }
    for (Handle h : handles) ASSERT_TRUE(wait(h).ok());
    handles.clear();
    for (int t = 0; t < 5; ++t) {
      handles.push_back(allreduce_async("cpu." + tag + std::to_string(t), hosts[t].view(), hosts[t].view(), o));
    }
    for (Handle h : handles) ASSERT_TRUE(wait(h).ok());
    const double tolerance = dtype == DataType::kFloat64 ? 1e-12 : dtype == DataType::kFloat32 ? 1e-6 : 1e-2;
    for (int t = 0; t < 5; ++t) {
      const Buffer got = tensors[t]->download();
      for (size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got.get(i), hosts[t].get(i), tolerance * (1.0 + std::fabs(hosts[t].get(i)))) << tag << t << "[" << i << "]";
      }
    }
  }
}

// Many tensors of odd sizes in flight at once, as a backward pass submits them: fused into few
// groups, each packed and unpacked by one batched copy.
void many_in_flight(const std::string& tag, int count) {
  std::vector<std::unique_ptr<DeviceTensor>> tensors;
  std::vector<Buffer> expected;
  std::vector<Handle> handles;
  for (int t = 0; t < count; ++t) {
    const int64_t n = (t * 37) % 1000 + 1;
    const Buffer host = input_for(DataType::kFloat32, {n}, ReduceOp::kAverage, t);
    tensors.push_back(std::make_unique<DeviceTensor>(host));
    expected.push_back(host);
  }
  const int64_t copies_before = testing::test_device().batched_copies();
  for (int t = 0; t < count; ++t) {
    handles.push_back(allreduce_async(tag + "." + std::to_string(t), tensors[t]->view(), tensors[t]->view()));
  }
  for (Handle& h : handles) {
    Status s = wait(h);
    ASSERT_TRUE(s.ok()) << s.message();
  }
  const int64_t copies = testing::test_device().batched_copies() - copies_before;
  for (int t = 0; t < count; ++t) {
    AllreduceOptions o;
    ASSERT_TRUE(same_bytes(tensors[t]->download(), cpu_allreduce(tag + "." + std::to_string(t), expected[t], o)))
        << "tensor " << t;
  }
  if (copies >= 0) {
    // Two batched copies (pack, unpack) per fused group; the groups are many fewer than the tensors.
    EXPECT_LT(copies, count / 4) << copies << " batched copies for " << count << " tensors";
  }
}

TEST(GpuAllreduceFusion, AThousandTensorsInFlight) { many_in_flight("fused", 1200); }

TEST(GpuAllreduceFusion, FusionOff) {
  ScopedSettings settings(Settings{{"KOLO_FUSION_THRESHOLD_BYTES", "0"}});
  std::vector<std::unique_ptr<DeviceTensor>> tensors;
  std::vector<Handle> handles;
  for (int t = 0; t < 20; ++t) {
    tensors.push_back(std::make_unique<DeviceTensor>(input_for(DataType::kInt32, {t + 1}, ReduceOp::kSum, t)));
    handles.push_back(allreduce_async("unfused." + std::to_string(t), tensors.back()->view(), tensors.back()->view(),
                                      AllreduceOptions{ReduceOp::kSum, 1.0, 1.0, {}}));
  }
  for (int t = 0; t < 20; ++t) {
    ASSERT_TRUE(wait(handles[t]).ok());
    AllreduceOptions o;
    o.op = ReduceOp::kSum;
    EXPECT_TRUE(same_bytes(tensors[t]->download(),
                           cpu_allreduce("unfused." + std::to_string(t), input_for(DataType::kInt32, {t + 1}, ReduceOp::kSum, t), o)));
  }
}

TEST(GpuAllreduce, HierarchicalEveryDtypeAndOddSizes) {
  // On one host: reduce-scatter and allgather inside it; on the emulated cluster, across hosts too.
  ScopedSettings settings(Settings{{"KOLO_HIERARCHICAL_ALLREDUCE", "1"}});
  for (DataType dtype : testing::all_dtypes()) {
    for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{1001}}) {
      const std::string name = std::string("har.") + dtype_name(dtype) + "." + std::to_string(n);
      const Buffer host = input_for(dtype, {n}, ReduceOp::kAverage);
      DeviceTensor t(host);
      ASSERT_TRUE(allreduce(name, t.view(), t.view()).ok());
      AllreduceOptions o;
      EXPECT_TRUE(same_bytes(t.download(), cpu_allreduce(name, host, o))) << name;
    }
  }
  many_in_flight("hfused", 200);
}

TEST(GpuAllreduce, CompressionCastsInThePackAndBackInTheUnpackAsOnTheCpu) {
  for (Compression c : {Compression::kFloat16, Compression::kBFloat16}) {
    for (bool fused : {false, true}) {
      AllreduceOptions o;
      o.op = ReduceOp::kAverage;
      o.prescale_factor = 0.5;
      o.postscale_factor = 3.0;
      o.compression = c;
      const std::string tag = std::string("compressed.") + compression_name(c) + (fused ? ".fused." : ".alone.");
      std::vector<Buffer> hosts;
      std::vector<std::unique_ptr<DeviceTensor>> tensors;
      std::vector<Handle> handles;
      for (int t = 0; t < (fused ? 30 : 1); ++t) {
        Buffer host = input_for(DataType::kFloat32, {1000 + t}, ReduceOp::kAverage, t);
        host.set(0, 1.0 + 1.0 / 4096);  // not exact in 16 bits: shows the data travelled compressed
        hosts.push_back(host);
        tensors.push_back(std::make_unique<DeviceTensor>(host));
        handles.push_back(allreduce_async(tag + std::to_string(t), tensors.back()->view(), tensors.back()->view(), o));
      }
      for (size_t t = 0; t < handles.size(); ++t) {
        ASSERT_TRUE(wait(handles[t]).ok());
        EXPECT_TRUE(same_bytes(tensors[t]->download(), cpu_allreduce(tag + std::to_string(t), hosts[t], o))) << tag << t;
      }
    }
  }
}

TEST(GpuAllreduce, BoolsReduceLogicallyAsOnTheCpu) {
  for (ReduceOp op : kOps) {
    for (int64_t n : {int64_t{1}, int64_t{333}}) {
      Buffer host(DataType::kBool, {n});
      for (size_t i = 0; i < host.size(); ++i) host.set(i, (i + static_cast<size_t>(rank())) % 3 == 0);
      DeviceTensor t(host);
      AllreduceOptions o;
      o.op = op;
      const std::string name = std::string("bool.") + reduce_op_name(op) + "." + std::to_string(n);
      ASSERT_TRUE(allreduce(name, t.view(), t.view(), o).ok());
      EXPECT_TRUE(same_bytes(t.download(), cpu_allreduce(name, host, o))) << name;
    }
  }
}

class GpuAllgather : public ::testing::TestWithParam<DataType> {};

TEST_P(GpuAllgather, RowsDifferPerRankAndMatchTheCpuPath) {
  const DataType dtype = GetParam();
  for (bool uneven : {false, true}) {
    const int64_t rows = uneven ? rank() + 1 : 2;
    const Buffer host = input_for(dtype, {rows, 3}, ReduceOp::kSum);
    DeviceTensor in(dtype, {rows, 3});
    in.upload(host);
    const std::string name = std::string("ag.") + dtype_name(dtype) + (uneven ? ".uneven" : ".even");
    Output gpu, cpu;
    Status s = allgather(name, in.view(), &gpu);
    ASSERT_TRUE(s.ok()) << s.message();
    Buffer mine = host;
    ASSERT_TRUE(allgather("cpu." + name, mine.view(), &cpu).ok());
    ASSERT_EQ(gpu.view.shape, cpu.view.shape);
    EXPECT_EQ(gpu.view.device, Device::CUDA(testing::test_ordinal()));
    Buffer got(dtype, gpu.view.shape);
    ASSERT_TRUE(testing::test_device().backend()->copy(got.data(), gpu.view.data, gpu.view.size_bytes(), nullptr).ok());
    testing::sync_stream(nullptr);
    EXPECT_EQ(testing::values_of(cpu), [&] {
      std::vector<double> v;
      for (size_t i = 0; i < got.size(); ++i) v.push_back(got.get(i));
      return v;
    }()) << name;
  }
}

INSTANTIATE_TEST_SUITE_P(Dtypes, GpuAllgather, ::testing::ValuesIn(testing::all_dtypes()), testing::dtype_param_name);

TEST(GpuAllgather, IntoTheCallersMemoryAndHierarchical) {
  for (const char* hierarchical : {"0", "1"}) {
    ScopedSettings settings(Settings{{"KOLO_HIERARCHICAL_ALLGATHER", hierarchical}});
    const int64_t rows = rank() % 2 + 1;
    DeviceTensor in(input_for(DataType::kFloat64, {rows * 2}, ReduceOp::kSum));
    int64_t total = 0;
    for (int r = 0; r < size(); ++r) total += (r % 2 + 1) * 2;
    DeviceTensor mine(DataType::kFloat64, {total});
    SizedOutputOptions o;
    o.allocate = [&](const std::vector<int64_t>& shape, TensorView* out) {
      EXPECT_EQ(shape, std::vector<int64_t>{total});
      *out = mine.view();
      return Status::OK();
    };
    TensorView v = in.view();
    v.shape = {rows * 2};
    Output out;
    ASSERT_TRUE(allgather(std::string("ag.own.") + hierarchical, v, &out, o).ok());
    EXPECT_EQ(out.view.data, mine.data());
    EXPECT_EQ(out.storage, nullptr);
    const Buffer got = mine.download();
    size_t at = 0;
    for (int r = 0; r < size(); ++r) {
      for (size_t i = 0; i < static_cast<size_t>((r % 2 + 1) * 2); ++i, ++at) {
        ASSERT_EQ(got.get(at), value(i, r)) << "rank " << r << " element " << i;
      }
    }
  }
}

TEST(GpuBroadcast, FromEveryRootInPlaceAndOut) {
  for (int root = 0; root < size(); ++root) {
    for (bool in_place : {true, false}) {
      const Buffer host = input_for(DataType::kBFloat16, {1000}, ReduceOp::kSum, root);
      DeviceTensor in(host), out(DataType::kBFloat16, {1000});
      const std::string name = "bc." + std::to_string(root) + (in_place ? ".in" : ".out");
      ASSERT_TRUE(broadcast(name, in.view(), in_place ? in.view() : out.view(), root).ok());
      Buffer cpu = host;
      ASSERT_TRUE(broadcast("cpu." + name, cpu.view(), cpu.view(), root).ok());
      EXPECT_TRUE(same_bytes((in_place ? in : out).download(), cpu)) << name;
    }
  }
}

TEST(GpuAlltoall, UnevenSplits) {
  const int n = size();
  // Rank r sends (r + q) % 3 rows of 2 to rank q.
  std::vector<int64_t> splits;
  int64_t rows = 0;
  for (int q = 0; q < n; ++q) {
    splits.push_back((rank() + q) % 3);
    rows += splits.back();
  }
  const Buffer host = input_for(DataType::kInt64, {rows, 2}, ReduceOp::kSum);
  DeviceTensor in(DataType::kInt64, {rows, 2});
  in.upload(host);
  Output gpu, cpu;
  Status s = alltoall("a2a", in.view(), splits, &gpu);
  ASSERT_TRUE(s.ok()) << s.message();
  Buffer mine = host;
  ASSERT_TRUE(alltoall("cpu.a2a", mine.view(), splits, &cpu).ok());
  EXPECT_EQ(gpu.received_splits, cpu.received_splits);
  ASSERT_EQ(gpu.view.shape, cpu.view.shape);
  Buffer got(DataType::kInt64, gpu.view.shape);
  ASSERT_TRUE(testing::test_device().backend()->copy(got.data(), gpu.view.data, gpu.view.size_bytes(), nullptr).ok());
  testing::sync_stream(nullptr);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got.get(i), testing::values_of(cpu)[i]) << i;
}

TEST(GpuReducescatter, OddRowsEveryOpWithScaling) {
  for (ReduceOp op : kOps) {
    for (int64_t rows : {int64_t{size()} * 3, int64_t{size()} * 3 + 1}) {
      const std::string name = std::string("rs.") + reduce_op_name(op) + "." + std::to_string(rows);
      const Buffer host = input_for(DataType::kFloat32, {rows, 5}, op);
      DeviceTensor in(DataType::kFloat32, {rows, 5});
      in.upload(host);
      const int64_t mine = reducescatter_rows(rows, rank(), size());
      DeviceTensor out(DataType::kFloat32, {mine, 5});
      ReducescatterOptions o;
      o.op = op;
      o.prescale_factor = op == ReduceOp::kSum ? 0.5 : 1.0;
      o.postscale_factor = 2.0;
      TensorView iv = in.view(), ov = out.view();
      iv.shape = {rows, 5};
      ov.shape = {mine, 5};
      Status s = reducescatter(name, iv, ov, o);
      ASSERT_TRUE(s.ok()) << s.message();
      Buffer cpu_in = host;
      Buffer cpu_out(DataType::kFloat32, {mine, 5});
      TensorView ci = cpu_in.view();
      ci.shape = {rows, 5};
      ASSERT_TRUE(reducescatter("cpu." + name, ci, cpu_out.view(), o).ok());
      const Buffer got = out.download();
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got.get(i), cpu_out.get(i)) << name << " element " << i;
    }
  }
}

TEST(GpuJoin, AJoinedRankTakesPartFromItsGpuWithTheIdentity) {
  if (size() < 2) GTEST_SKIP() << "join needs a second rank";
  // The last rank has no more data; the others allreduce (an Average over every rank, the joined
  // one contributing zeros), allgather and broadcast GPU tensors, the joined rank taking part from its GPU.
  const int last = size() - 1;
  int last_joined = -1;
  if (rank() == last) {
    ASSERT_TRUE(join(&last_joined).ok());
  } else {
    for (ReduceOp op : kOps) {
      const Buffer host = input_for(DataType::kFloat64, {300}, op);
      DeviceTensor t(host);
      AllreduceOptions o;
      o.op = op;
      const std::string name = std::string("joined.") + reduce_op_name(op);
      ASSERT_TRUE(allreduce(name, t.view(), t.view(), o).ok());
      const Buffer got = t.download();
      const int n = size() - 1;  // contributing ranks
      for (size_t i = 0; i < 300; ++i) {
        double acc = op == ReduceOp::kProduct ? 1.0 : op == ReduceOp::kMin ? 1e9 : op == ReduceOp::kMax ? -1e9 : 0.0;
        for (int r = 0; r < n; ++r) {
          const double v = op == ReduceOp::kProduct ? factor_value(i, r) : value(i, r);
          acc = op == ReduceOp::kProduct ? acc * v : op == ReduceOp::kMin ? std::min(acc, v) : op == ReduceOp::kMax ? std::max(acc, v) : acc + v;
        }
        if (op == ReduceOp::kAverage) acc *= 1.0 / size();
        ASSERT_EQ(got.get(i), acc) << name << " element " << i;
      }
    }
    DeviceTensor g(input_for(DataType::kInt32, {2}, ReduceOp::kSum));
    Output out;
    ASSERT_TRUE(allgather("joined.gather", g.view(), &out).ok());
    ASSERT_EQ(out.view.shape, std::vector<int64_t>{2 * last});
    DeviceTensor b(input_for(DataType::kUInt8, {10}, ReduceOp::kSum));
    ASSERT_TRUE(broadcast("joined.bc", b.view(), b.view(), 0).ok());
    const Buffer bc = b.download();
    for (size_t i = 0; i < 10; ++i) ASSERT_EQ(bc.get(i), value(i, 0));
    ASSERT_TRUE(barrier().ok());
    ASSERT_TRUE(join(&last_joined).ok());
  }
  EXPECT_NE(last_joined, last);
  // After the join, every rank takes part again.
  DeviceTensor after(input_for(DataType::kFloat32, {4}, ReduceOp::kSum));
  AllreduceOptions sum;
  sum.op = ReduceOp::kSum;
  ASSERT_TRUE(allreduce("after.join", after.view(), after.view(), sum).ok());
  double expected = 0;
  for (int r = 0; r < size(); ++r) expected += value(0, r);
  EXPECT_EQ(after.download().get(0), expected);
}

// GPU tensors in process sets: each set runs on communicators of its own (NCCL ones on a GPU), the
// even and the odd ranks at once, each op against the CPU path in the same set.
TEST(GpuProcessSets, DisjointSetsMatchTheCpuPathInTheSet) {
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks";
  std::vector<int> even, odd;
  for (int r = 0; r < size(); ++r) (r % 2 ? odd : even).push_back(r);
  int even_id = -1, odd_id = -1;
  ASSERT_TRUE(add_process_set(even, &even_id).ok());
  ASSERT_TRUE(add_process_set(odd, &odd_id).ok());
  const bool is_even = rank() % 2 == 0;
  const std::vector<int>& members = is_even ? even : odd;
  const int id = is_even ? even_id : odd_id;

  const Buffer host = input_for(DataType::kFloat32, {1001}, ReduceOp::kSum);
  DeviceTensor in(host);
  ReduceOptions sum;
  sum.op = ReduceOp::kSum;
  sum.process_set = id;
  ASSERT_TRUE(allreduce("set.ar", in.view(), in.view(), sum).ok());
  Buffer cpu = host;
  ASSERT_TRUE(allreduce("set.cpu.ar", cpu.view(), cpu.view(), sum).ok());
  EXPECT_TRUE(same_bytes(in.download(), cpu));

  BroadcastOptions bo;
  bo.process_set = id;
  Buffer mine = input_for(DataType::kInt32, {7}, ReduceOp::kSum, rank());
  DeviceTensor b(mine);
  ASSERT_TRUE(broadcast("set.bc", b.view(), b.view(), members.back(), bo).ok());  // root: a job rank
  ASSERT_TRUE(broadcast("set.cpu.bc", mine.view(), mine.view(), members.back(), bo).ok());
  EXPECT_TRUE(same_bytes(b.download(), mine));

  SizedOutputOptions so;
  so.process_set = id;
  DeviceTensor rows(DataType::kFloat64, {2, 3});
  rows.upload(input_for(DataType::kFloat64, {2, 3}, ReduceOp::kSum));
  Output gathered;
  ASSERT_TRUE(allgather("set.ag", rows.view(), &gathered, so).ok());
  EXPECT_EQ(gathered.view.shape, (std::vector<int64_t>{2 * static_cast<int64_t>(members.size()), 3}));

  ASSERT_TRUE(barrier().ok());
  {
    const Status removed = remove_process_set(even_id);
    ASSERT_TRUE(removed.ok()) << removed.message();
  }
  {
    const Status removed = remove_process_set(odd_id);
    ASSERT_TRUE(removed.ok()) << removed.message();
  }
}

}  // namespace
}  // namespace kolo
