// Allreduce on GPU tensors, every dtype, exact: each result is compared with the same op on CPU
// tensors (kolo's MPI path) in the same run, fused, hierarchical and compressed too, at whatever
// number of ranks mpirun started.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "gpu/gpu_collective_inputs.h"
#include "gpu/gpu_test_util.h"

// In kolo::testing, where the suite's helpers (gpu_collective_inputs.h, gpu_test_util.h) are.
namespace kolo {
namespace testing {
namespace {

// The allreduce of `in` on the CPU path, for comparison.
Buffer cpu_allreduce(const std::string& name, Buffer in, const AllreduceOptions& o) {
  Status s = allreduce("cpu." + name, in.view(), in.view(), o);
  EXPECT_TRUE(s.ok()) << s.message();
  return in;
}

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

}  // namespace
}  // namespace testing
}  // namespace kolo
