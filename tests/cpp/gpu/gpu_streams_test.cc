// The GPU path's ordering and its edges: kolo's work waits for the producer's stream on the device
// (a producer still writing when the op is enqueued), a caller's stream can wait for kolo's work
// instead of the host, device ops in the timeline, and clear errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include "gpu/gpu_test_util.h"

namespace kolo {
namespace {

using testing::Buffer;
using testing::DeviceTensor;
using testing::ScopedSettings;
using testing::TestStream;

Buffer filled(DataType dtype, int64_t n, double v) {
  Buffer b(dtype, {n});
  for (size_t i = 0; i < b.size(); ++i) b.set(i, v + static_cast<double>(i % 10));
  return b;
}

TEST(GpuStreams, AProducerStillWritingWhenTheOpIsEnqueuedIsWaitedFor) {
  // The producer's stream is held up, then writes the real values; kolo gets the op at once. If the
  // collective did not wait for the producer's stream, it would reduce the stale zeros.
  TestStream producer;
  DeviceBackend& b = *testing::test_device().backend();
  for (int round = 0; round < 3; ++round) {
    const std::string tag = std::to_string(round);
    const DeviceTensor real_t(filled(DataType::kFloat32, 4096, rank() + 1.0)), real_u(filled(DataType::kFloat32, 7, rank() + 1.0));
    DeviceTensor t(filled(DataType::kFloat32, 4096, 0.0)), u(filled(DataType::kFloat32, 7, 0.0));  // stale
    // Device to device, on the producer's stream, after the hold-up: the host does not wait.
    ASSERT_TRUE(testing::test_device().delay(producer.get(), 0.2).ok());
    ASSERT_TRUE(b.copy(t.data(), real_t.data(), t.bytes(), producer.get()).ok());
    ASSERT_TRUE(b.copy(u.data(), real_u.data(), u.bytes(), producer.get()).ok());
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    Handle a = allreduce_async("producer.t." + tag, t.view(producer.get()), t.view(producer.get()), sum);
    Handle b = allreduce_async("producer.u." + tag, u.view(producer.get()), u.view(producer.get()), sum);
    ASSERT_TRUE(wait(a).ok());
    ASSERT_TRUE(wait(b).ok());
    const double ranks_sum = size() * (size() + 1) / 2.0;
    const Buffer got = t.download();
    for (size_t i = 0; i < got.size(); ++i) {
      ASSERT_EQ(got.get(i), ranks_sum + size() * static_cast<double>(i % 10)) << "round " << round << " element " << i;
    }
    EXPECT_EQ(u.download().get(6), ranks_sum + size() * 6.0);
  }
}

TEST(GpuStreams, ACallersStreamWaitsForKolosWorkOnTheDevice) {
  // wait_on_stream returns once the work is launched; what the caller then queues on its stream
  // (here a copy to the host) runs after the collective.
  TestStream consumer;
  for (int round = 0; round < 3; ++round) {
    DeviceTensor t(filled(DataType::kFloat64, 100000, rank()));
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    Handle h = allreduce_async("onstream." + std::to_string(round), t.view(), t.view(), sum);
    ASSERT_TRUE(wait_on_stream(h, consumer.get()).ok());
    Buffer host(DataType::kFloat64, {100000});
    ASSERT_TRUE(testing::test_device().backend()->copy(host.data(), t.data(), t.bytes(), consumer.get()).ok());
    testing::sync_stream(consumer.get());
    const double ranks = size() * (size() - 1) / 2.0;
    for (size_t i = 0; i < host.size(); i += 997) ASSERT_EQ(host.get(i), ranks + size() * static_cast<double>(i % 10)) << i;
    EXPECT_EQ(poll(h)->code(), StatusCode::kUnknownHandle) << "wait_on_stream releases the handle";
  }
}

TEST(GpuStreams, EmptyTensorsOfEveryOp) {
  DeviceTensor none(DataType::kFloat32, {0});
  ASSERT_TRUE(allreduce("empty.ar", none.view(), none.view()).ok());
  ASSERT_TRUE(broadcast("empty.bc", none.view(), none.view(), 0).ok());
  Output out;
  ASSERT_TRUE(allgather("empty.ag", none.view(), &out).ok());
  EXPECT_EQ(out.view.shape, std::vector<int64_t>{0});
}

TEST(GpuErrors, ATensorOnAnotherGpuThanKolosFailsAtOnceNamingBoth) {
  DeviceTensor t(filled(DataType::kFloat32, 4, 1.0));
  ASSERT_TRUE(allreduce("bound", t.view(), t.view()).ok());  // binds kolo to the suite's GPU
  TensorView other = t.view();
  other.device = Device::CUDA(testing::test_ordinal() + 1);
  Status s = allreduce("elsewhere", other, other);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "allreduce of tensor 'elsewhere' on rank " + std::to_string(rank()) + ": the tensor is on cuda:" +
                             std::to_string(testing::test_ordinal() + 1) +
                             ", but kolo drives one GPU per process and this process's first GPU op ran on cuda:" +
                             std::to_string(testing::test_ordinal()) + " (pin one GPU per rank, e.g. by local rank)");
  // kolo goes on.
  ASSERT_TRUE(allreduce("after.elsewhere", t.view(), t.view()).ok());
}

TEST(GpuErrors, RanksDisagreeingFailOnEveryRank) {
  if (size() < 2) GTEST_SKIP() << "needs a second rank";
  DeviceTensor t(DataType::kFloat32, {rank() == 0 ? 4 : 5});
  Status s = allreduce("disagree", t.view(), t.view());
  EXPECT_EQ(s.code(), StatusCode::kMismatch);
  EXPECT_NE(s.message().find("Mismatched shape for tensor 'disagree' (allreduce)"), std::string::npos) << s.message();
  // A GPU tensor on one rank, a CPU tensor on another.
  Buffer cpu = filled(DataType::kFloat32, 4, 0);
  DeviceTensor gpu(filled(DataType::kFloat32, 4, 0));
  s = allreduce("device.disagree", rank() == 0 ? cpu.view() : gpu.view(), rank() == 0 ? cpu.view() : gpu.view());
  EXPECT_EQ(s.code(), StatusCode::kMismatch);
  EXPECT_NE(s.message().find("Mismatched device for tensor 'device.disagree'"), std::string::npos) << s.message();
}

// The timeline this rank wrote for `path` (its %r replaced by the rank, the name in *file).
std::string rank_trace(const std::string& path, std::string* file) {
  *file = path;
  file->replace(file->find("%r"), 2, std::to_string(rank()));
  std::ifstream in(*file);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

TEST(GpuTimeline, DevicePhasesAreInTheTrace) {
  // The pid: suites at other rank counts may run beside this one (ctest -j).
  const std::string path = "/tmp/kolo_gpu_timeline_" + std::to_string(getpid()) + "_%r.json";
  {
    ScopedSettings settings(Settings{{"KOLO_TIMELINE", path}});
    std::vector<std::unique_ptr<DeviceTensor>> tensors;
    std::vector<Handle> handles;
    for (int t = 0; t < 5; ++t) {
      tensors.push_back(std::make_unique<DeviceTensor>(filled(DataType::kFloat32, 1000, t)));
      handles.push_back(allreduce_async("traced." + std::to_string(t), tensors.back()->view(), tensors.back()->view()));
    }
    for (Handle& h : handles) ASSERT_TRUE(wait(h).ok());
  }
  std::string file;
  const std::string trace = rank_trace(path, &file);
  for (const char* phase : {"\"NEGOTIATE\"", "\"PACK\"", "\"COLLECTIVE\"", "\"UNPACK\""}) {
    EXPECT_NE(trace.find(phase), std::string::npos) << phase << " missing from " << file;
  }
  EXPECT_NE(trace.find("_ALLREDUCE\",\"fused\":"), std::string::npos) << trace.substr(0, 2000);
  std::remove(file.c_str());
}


TEST(GpuFusion, TensorsReadyWhileTwoGroupsRunGoAsOneGroup) {
  // Two groups held up on the device (their producer's stream is delayed): the next cycle waits
  // for one to end (KOLO_DEVICE_GROUPS_IN_FLIGHT=2, the default, for at most 50 ms), so eight
  // tensors submitted a millisecond apart meanwhile go as one group of eight, not one by one
  // (each a collective's latency; 30 groups a ResNet-50 step on NCCL over sockets, instead of 7).
  const std::string path = "/tmp/kolo_gpu_hold_" + std::to_string(getpid()) + "_%r.json";
  const int kTensors = 8;
  {
    ScopedSettings settings(Settings{{"KOLO_TIMELINE", path}});
    TestStream producer;
    TestStream consumer;
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    DeviceTensor held_a(filled(DataType::kFloat32, 64, 1.0)), held_b(filled(DataType::kFloat32, 64, 1.0));
    std::vector<std::unique_ptr<DeviceTensor>> tensors;
    for (int t = 0; t < kTensors; ++t) tensors.push_back(std::make_unique<DeviceTensor>(filled(DataType::kFloat32, 100 + t, t)));
    // After the uploads: on CUDA they go through the legacy default stream, which would wait out the delay.
    ASSERT_TRUE(testing::test_device().delay(producer.get(), 0.3).ok());
    // wait_on_stream returns once the group is launched, i.e. running on kolo's stream.
    ASSERT_TRUE(wait_on_stream(allreduce_async("hold.a", held_a.view(producer.get()), held_a.view(producer.get()), sum),
                               consumer.get()).ok());
    ASSERT_TRUE(wait_on_stream(allreduce_async("hold.b", held_b.view(producer.get()), held_b.view(producer.get()), sum),
                               consumer.get()).ok());
    std::vector<Handle> handles;
    for (int t = 0; t < kTensors; ++t) {
      handles.push_back(allreduce_async("hold.x." + std::to_string(t), tensors[t]->view(), tensors[t]->view(), sum));
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    for (Handle& h : handles) ASSERT_TRUE(wait(h).ok());
    for (int t = 0; t < kTensors; ++t) {
      EXPECT_EQ(tensors[t]->download().get(3), size() * (t + 3.0)) << "hold.x." << t;
    }
    testing::sync_stream(consumer.get());
  }
  std::string file;
  const std::string trace = rank_trace(path, &file);
  // Each tensor is a process of the trace ({"name":"process_name",...,"pid":P,"args":{"name":N}});
  // its COLLECTIVE event says how many tensors its group fused.
  for (int t = 0; t < kTensors; ++t) {
    const std::string name = "hold.x." + std::to_string(t);
    const std::regex named("\\{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":(\\d+),\"args\":\\{\"name\":\"" +
                           std::regex_replace(name, std::regex("\\."), "\\.") + "\"\\}\\}");
    std::smatch m;
    ASSERT_TRUE(std::regex_search(trace, m, named)) << name << " missing from " << file;
    const std::regex collective("\"name\":\"COLLECTIVE\",\"ph\":\"X\",\"pid\":" + m[1].str() +
                                ",[^}]*\"fused\":(\\d+)");
    std::smatch c;
    ASSERT_TRUE(std::regex_search(trace, c, collective)) << name << "'s COLLECTIVE missing from " << file;
    EXPECT_EQ(c[1].str(), std::to_string(kTensors)) << name << " went in a group of " << c[1].str();
  }
  if (::testing::Test::HasFailure()) {
    std::printf("the trace is kept for a look: %s\n", file.c_str());
  } else {
    std::remove(file.c_str());
  }
}

}  // namespace
}  // namespace kolo

namespace kolo {
namespace {

// Run alone by tests/cpp/gpu_double/test_faults.py (KOLO_TEST_DIE_RANK set): that rank kills itself
// while its GPU collectives are in flight; the job must end on every rank, never hang.
TEST(GpuFaults, APeerThatDiesMidCollectiveEndsTheJob) {
  const char* die = std::getenv("KOLO_TEST_DIE_RANK");
  if (die == nullptr) GTEST_SKIP() << "run by tests/cpp/gpu_double/test_faults.py, which kills a rank";
  std::vector<std::unique_ptr<DeviceTensor>> tensors;
  for (int t = 0; t < 8; ++t) tensors.push_back(std::make_unique<DeviceTensor>(filled(DataType::kFloat32, 1 << 16, t)));
  for (int step = 0; step < 100000; ++step) {
    std::vector<Handle> handles;
    for (int t = 0; t < 8; ++t) {
      handles.push_back(allreduce_async("dies." + std::to_string(t), tensors[t]->view(), tensors[t]->view()));
    }
    if (step == 5 && rank() == std::atoi(die)) std::raise(SIGKILL);
    for (Handle& h : handles) ASSERT_TRUE(wait(h).ok());
  }
}

}  // namespace
}  // namespace kolo
