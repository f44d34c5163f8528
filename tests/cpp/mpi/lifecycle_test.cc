// init/shutdown, in-flight ops at shutdown, stalls, the timeline, topology and threads (the C ABI: c_api_test.cc).
#include <gtest/gtest.h>
#include <mpi.h>

#include <dirent.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "../unit/json_check.h"
#include "kolo/c_api.h"
#include "mpi_test_util.h"

namespace kolo {
namespace {

using testing::Buffer;
using testing::ScopedSettings;

// One host unless the emulated cluster (tests/system/cluster) says how many: ranks fill hosts in order
// (--map-by slot), the same number on each.
TEST(Topology, RanksPerHostAndHosts) {
  int world_rank = -1, world_size = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world_size);
  const char* hosts_env = std::getenv("CLUSTER_HOST_COUNT");
  const int hosts = hosts_env ? std::atoi(hosts_env) : 1;
  const int per_host = world_size / hosts;
  EXPECT_EQ(rank(), world_rank);
  EXPECT_EQ(size(), world_size);
  EXPECT_EQ(local_rank(), world_rank % per_host);
  EXPECT_EQ(local_size(), per_host);
  EXPECT_EQ(cross_rank(), world_rank / per_host);
  EXPECT_EQ(cross_size(), hosts);
  EXPECT_TRUE(testing::threads_multiple());
}

// The library as users load it, where no GPU is usable (CI): CPU jobs run, and a GPU tensor is
// refused at once, saying why. On a machine with a GPU it skips (the gpu suite covers that).
TEST(NoGpu, AGpuTensorIsRefusedSayingWhyAndCpuOpsGoOn) {
  TensorView none;
  none.dtype = DataType::kFloat32;
  none.shape = {0};
  none.device = Device::CUDA(0);
  Status s = allreduce("gpu.here", none, none);
  if (s.ok()) GTEST_SKIP() << "a GPU is usable here: this test is for machines without one";
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  const std::string why = build_info().cuda ? "no GPU is usable (cudaGetDeviceCount: "
                                            : "this kolo was built without CUDA and NCCL";
  EXPECT_EQ(s.message().rfind("allreduce of tensor 'gpu.here' on rank " + std::to_string(rank()) +
                                  ": input is on cuda:0, but " + why, 0),
            0u)
      << s.message();
  EXPECT_NE(s.message().find("; use CPU tensors"), std::string::npos) << s.message();
  Buffer b(DataType::kFloat32, {2});
  EXPECT_TRUE(allreduce("cpu.after.gpu", b.view(), b.view()).ok());
}

TEST(Lifecycle, OpsAfterShutdownFailAndInitAgainWorks) {
  ASSERT_TRUE(shutdown().ok());
  EXPECT_FALSE(is_initialized());
  EXPECT_EQ(rank(), -1);
  Buffer b(DataType::kFloat32, {2});
  Status s = allreduce("after.shutdown", b.view(), b.view());
  EXPECT_EQ(s.code(), StatusCode::kNotInitialized);
  EXPECT_EQ(s.message(), "allreduce of tensor 'after.shutdown': kolo has been shut down on this rank");
  ASSERT_TRUE(init().ok());
  ASSERT_TRUE(init().ok());  // idempotent
  EXPECT_TRUE(is_initialized());
  EXPECT_TRUE(allreduce("after.reinit", b.view(), b.view()).ok());
}

// init() may ask for the other world after shutdown() (KOLO_CONTROLLER among its settings): the job runs over
// it, with exact results, and back. Where the store's address is given (the gloo_npN runs).
TEST(Lifecycle, InitCanSwitchBetweenTheMpiAndGlooWorlds) {
  if (!build_info().gloo) GTEST_SKIP() << "this kolo was built without Gloo";
  if (std::getenv("MASTER_ADDR") == nullptr) GTEST_SKIP() << "no MASTER_ADDR/MASTER_PORT for a Gloo world's store";
  for (const char* world : {"mpi", "gloo", "mpi"}) {
    ScopedSettings in(Settings{{"KOLO_CONTROLLER", world}});
    EXPECT_EQ(controller(), world);
    float x = static_cast<float>(rank() + 1);
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    ASSERT_TRUE(allreduce(std::string("switch.") + world, cpu_view(&x, {1}), cpu_view(&x, {1}), sum).ok());
    EXPECT_EQ(x, static_cast<float>(size() * (size() + 1) / 2)) << world;
  }
}

TEST(Lifecycle, WithoutUlfmALostPeerIsNotSurvivedInPlaceAndRecoveryIsRefused) {
  // Debian's Open MPI has no ULFM (tests/elastic_in_place.sh runs the in-place path against Open MPI 5's).
  if (build_info().mpi_ulfm && controller() == "mpi") GTEST_SKIP() << "this MPI has ULFM";
  EXPECT_FALSE(in_place_recovery());
  Status s = recover_in_place();
  EXPECT_EQ(s.code(), StatusCode::kUnsupported);
  EXPECT_EQ(s.message(), controller() == "mpi"
                             ? "recover_in_place: this MPI has no ULFM (Open MPI 5 has it)"
                             : "recover_in_place: this Gloo world ends at a lost peer (kolorun --gloo --in-place, or "
                               "KOLO_GLOO_IN_PLACE=1, makes its survivors go on)");
  EXPECT_TRUE(is_initialized());  // refused: nothing was stopped
  EXPECT_EQ(kolo_recover_in_place(), KOLO_UNSUPPORTED);
  EXPECT_EQ(kolo_in_place_recovery(), 0);
}

TEST(Lifecycle, ShutdownFailsOpsInFlightOnEveryRank) {
  if (size() < 2) GTEST_SKIP() << "needs a rank that never submits the op";
  Buffer b(DataType::kFloat32, {2});
  Handle h;
  if (rank() == 0) h = allreduce_async("never.completes", b.view(), b.view());
  ASSERT_TRUE(barrier().ok());
  ASSERT_TRUE(shutdown().ok());
  if (rank() == 0) {
    Status s = wait(h);
    EXPECT_EQ(s.code(), StatusCode::kAborted);
    // Which ranks had called shutdown() by the cycle that stopped the engine depends on timing.
    const std::string prefix = "tensor 'never.completes' did not run: kolo was shut down (shutdown() called on rank";
    EXPECT_EQ(s.message().substr(0, prefix.size()), prefix) << s.message();
  }
  ASSERT_TRUE(init().ok());
}

TEST(Lifecycle, StallShutdownFailsTheStalledOp) {
  if (size() < 2) GTEST_SKIP() << "needs a rank that never submits the op";
  ScopedSettings settings(Settings{{"KOLO_STALL_CHECK_SECONDS", "0"}, {"KOLO_STALL_SHUTDOWN_SECONDS", "1"}});
  Buffer b(DataType::kFloat32, {2});
  if (rank() == 0) {
    Status s = wait(allreduce_async("stalled", b.view(), b.view()));
    EXPECT_EQ(s.code(), StatusCode::kAborted);
    const std::string missing = size() == 2 ? "rank 1" : "ranks 1-" + std::to_string(size() - 1);
    EXPECT_EQ(s.message(), "Stalled op failed: tensor 'stalled' (allreduce) was submitted by rank 0 but not by " + missing +
                               " within KOLO_STALL_SHUTDOWN_SECONDS=1.\n    " + missing +
                               " submitted instead: nothing (not yet at this step, or busy outside kolo)");
  }
  // The other ranks do nothing in kolo until rank 0 has its answer.
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_TRUE(barrier().ok());
}

TEST(Lifecycle, TimelineIsValidJsonWithEveryPhase) {
  const std::string path = ::testing::TempDir() + "kolo_mpi_timeline_" + std::to_string(size()) + "_%r.json";
  {
    ScopedSettings settings(Settings{{"KOLO_TIMELINE", path}, {"KOLO_ZERO_COPY_BYTES", "1000000"}});
    std::vector<Buffer> bufs;
    for (int i = 0; i < 4; ++i) bufs.emplace_back(DataType::kFloat32, std::vector<int64_t>{100});
    std::vector<Handle> hs;
    for (int i = 0; i < 4; ++i) hs.push_back(allreduce_async("tl." + std::to_string(i), bufs[i].view(), bufs[i].view()));
    for (Handle h : hs) ASSERT_TRUE(wait(h).ok());
    Buffer bad(rank() == 0 ? DataType::kInt32 : DataType::kFloat32, {1});
    allreduce("tl.bad", bad.view(), bad.view());
  }
  std::string file = path;
  file.replace(file.find("%r"), 2, std::to_string(rank()));
  std::ifstream f(file);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_TRUE(testing::JsonCheck::valid(text.str())) << text.str();
  for (const char* phase : {"\"NEGOTIATE\"", "\"QUEUE\"", "\"PACK\"", "\"COLLECTIVE\"", "\"UNPACK\"", "\"tl.3\"", "\"ERROR\""}) {
    if (size() == 1 && std::string(phase) == "\"ERROR\"") continue;
    EXPECT_NE(text.str().find(phase), std::string::npos) << phase;
  }
}

// Horovod's start_timeline / stop_timeline: a timeline started while kolo runs, cycles marked, and
// closed as valid JSON when stopped; ops before and after are not in it.
TEST(Lifecycle, TimelineStartedAndStoppedAtRunTime) {
  const std::string path = ::testing::TempDir() + "kolo_runtime_timeline_" + std::to_string(size()) + "_%r.json";
  Buffer b(DataType::kFloat32, {10});
  ASSERT_TRUE(allreduce("tl.before", b.view(), b.view()).ok());
  ASSERT_TRUE(start_timeline(path, /*mark_cycles=*/true).ok());
  ASSERT_TRUE(allreduce("tl.during", b.view(), b.view()).ok());
  ASSERT_TRUE(stop_timeline().ok());
  ASSERT_TRUE(allreduce("tl.after", b.view(), b.view()).ok());
  std::string file = path;
  file.replace(file.find("%r"), 2, std::to_string(rank()));
  std::ifstream f(file);
  std::stringstream text;
  text << f.rdbuf();
  EXPECT_TRUE(testing::JsonCheck::valid(text.str())) << text.str();
  EXPECT_NE(text.str().find("\"tl.during\""), std::string::npos);
  EXPECT_NE(text.str().find("\"CYCLE_START\""), std::string::npos);
  EXPECT_EQ(text.str().find("\"tl.before\""), std::string::npos);
  EXPECT_EQ(text.str().find("\"tl.after\""), std::string::npos);
  EXPECT_EQ(start_timeline("/nonexistent/dir/t_%r.json").code(), StatusCode::kInvalidArgument);
}

TEST(Threads, ConcurrentSubmittersGetExactResults) {
  constexpr int kThreads = 4, kOps = 50;
  std::vector<std::thread> threads;
  std::vector<int> failures(kThreads, 0);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &failures] {
      std::vector<std::vector<int64_t>> data(kOps);
      std::vector<Handle> hs;
      for (int i = 0; i < kOps; ++i) {
        data[i].assign(static_cast<size_t>(1 + i), rank() + t + i);
        AllreduceOptions o;
        o.op = ReduceOp::kSum;
        hs.push_back(allreduce_async("thread" + std::to_string(t) + "." + std::to_string(i), cpu_view(data[i]),
                                     cpu_view(data[i]), o));
      }
      for (int i = 0; i < kOps; ++i) {
        const int64_t expected = static_cast<int64_t>(size()) * (size() - 1) / 2 + static_cast<int64_t>(size()) * (t + i);
        if (!wait(hs[i]).ok()) ++failures[t];
        for (int64_t v : data[i]) failures[t] += v != expected;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

// This process's threads named `name`, each with its nice value (/proc: field 19 of a task's stat).
std::vector<int> nice_of_threads_named(const std::string& name) {
  std::vector<int> nice;
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return nice;
  std::vector<std::string> tasks;
  for (dirent* e = readdir(dir); e != nullptr; e = readdir(dir)) {
    if (e->d_name[0] != '.') tasks.push_back(std::string("/proc/self/task/") + e->d_name);
  }
  closedir(dir);
  for (const std::string& task : tasks) {
    std::ifstream comm(task + "/comm");
    if (!comm.good()) continue;
    std::string n;
    std::getline(comm, n);
    if (n != name) continue;
    std::ifstream stat(task + "/stat");
    std::string line;
    std::getline(stat, line);
    std::istringstream fields(line.substr(line.rfind(')') + 2));  // after "pid (comm) "
    std::string f;
    for (int i = 3; i <= 19; ++i) fields >> f;  // fields 3..19: state ... nice
    nice.push_back(std::stoi(f));
  }
  return nice;
}

TEST(Threads, KolosThreadIsNamedAndTakesKoloThreadNice) {
  // Each check before any rank goes on: a rank's shutdown() ends every rank's engine, and its thread.
  EXPECT_EQ(nice_of_threads_named("kolo"), std::vector<int>{0});
  MPI_Barrier(MPI_COMM_WORLD);
  {
    ScopedSettings nice(Settings{{"KOLO_THREAD_NICE", "7"}});
    EXPECT_EQ(nice_of_threads_named("kolo"), std::vector<int>{7});
    std::vector<float> data = {1.0f, 2.0f};
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    ASSERT_TRUE(allreduce("nice.sum", cpu_view(data), cpu_view(data), sum).ok());  // it runs ops as before
    EXPECT_EQ(data, (std::vector<float>{1.0f * size(), 2.0f * size()}));
  }
  // A new thread, from a thread at the default: back at 0.
  EXPECT_EQ(nice_of_threads_named("kolo"), std::vector<int>{0});
  MPI_Barrier(MPI_COMM_WORLD);
}

// The peer watch across init/shutdown cycles: each cycle's goodbyes may reach a rank after its watch
// stopped listening, and MPI gives the next watch's communicator the same id; the next watch must not
// take them for its peers' (it once did, and lost a live rank a timeout later).
TEST(PeerWatch, ManyInitShutdownCyclesLoseNoLiveRank) {
  if (size() < 2) GTEST_SKIP() << "needs peers to watch";
  for (int cycle = 0; cycle < 2; ++cycle) {
    ScopedSettings settings(Settings{{"KOLO_PEER_TIMEOUT_SECONDS", "1"}});
    Buffer b(DataType::kFloat32, {4});
    // Longer than the timeout, the ranks arriving at different times.
    for (int step = 0; step < 10; ++step) {
      const Status s = allreduce("watch." + std::to_string(step % 3), b.view(), b.view());
      ASSERT_TRUE(s.ok()) << "cycle " << cycle << ": " << s.message();
      std::this_thread::sleep_for(std::chrono::milliseconds(rank() == 1 ? 130 : 100));
    }
    ASSERT_TRUE(barrier().ok());
  }
}

}  // namespace
}  // namespace kolo
