// Small ops. KOLO_CALLER_DRIVES: a blocking call runs its op's cycles on the caller's thread (alone in
// flight or beside other ops), with the op (its callback runs there) where it rides on the negotiation
// or its collective gives up on a lost peer (a flat allreduce of at most 64 KiB, nonblocking there); a
// larger one, or the setting off, leave it to kolo's thread. Through the host's shared memory (every
// rank on one host) every size gives up, and runs on the caller. An async op's wait() drives it in the
// same way where kolo's thread has not taken it up yet (else it is left to kolo's thread); an op that
// ended before its wait is kolo's thread's, and a wait with a timeout drives nothing. A small async op's
// push does not wake kolo's thread where it will look within the cycle time: a wait that comes sooner runs
// it. KOLO_SMALL_OP_BYTES: a recurring small allreduce rides on the negotiation, with the CPU path's
// arithmetic. Each result exact.
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <thread>

#include "held_kolos_thread.h"
#include "mpi_test_util.h"

namespace kolo {
namespace {

using testing::Buffer;
using testing::ScopedSettings;

// Sums ranks + 1 in a blocking or async allreduce; the thread its callback ran on.
std::thread::id reduce_on(const std::string& name, bool block, int64_t elements = 3) {
  Buffer b(DataType::kFloat32, {elements});
  for (size_t i = 0; i < b.size(); ++i) b.set(i, rank() + 1.0);
  std::thread::id ran_on;
  AllreduceOptions o;
  o.op = ReduceOp::kSum;
  o.on_done = [&ran_on](const Status&) { ran_on = std::this_thread::get_id(); };
  const Status s = block ? allreduce(name, b.view(), b.view(), o) : wait(allreduce_async(name, b.view(), b.view(), o));
  EXPECT_TRUE(s.ok()) << s.message();
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b.get(i), size() * (size() + 1) / 2.0);
  return ran_on;
}

// Each rank in turn comes late, long enough that the others' waits sleep: across hosts they sleep on
// their doorbells (comm/peer_bell.h), which the late rank rings, the extra rank of a non-power-of-two
// size too (the cluster suite runs this file on emulated hosts).
TEST(SmallOps, EachRankLateInTurnGetsTheExactSum) {
  for (int late = 0; late < size(); ++late) {
    for (bool block : {true, false}) {
      if (rank() == late) std::this_thread::sleep_for(std::chrono::milliseconds(20));
      reduce_on("small.late", block);
    }
  }
}

TEST(CallerDrives, ABlockingCallAloneRunsOnTheCallersThread) {
  if (!testing::threads_multiple()) GTEST_SKIP() << "needs MPI_THREAD_MULTIPLE";
  const std::thread::id me = std::this_thread::get_id();
  // The first is negotiated and runs its own allreduce; cached, it rides.
  for (int i = 0; i < 20; ++i) EXPECT_EQ(reduce_on("drives.blocking", true), me);
}

Handle sum_async(const std::string& name, Buffer* b, std::thread::id* ran_on) {
  for (size_t i = 0; i < b->size(); ++i) b->set(i, rank() + 1.0);
  AllreduceOptions o;
  o.op = ReduceOp::kSum;
  o.on_done = [ran_on](const Status&) { *ran_on = std::this_thread::get_id(); };
  return allreduce_async(name, b->view(), b->view(), o);
}

void expect_summed(const Buffer& b) {
  for (size_t i = 0; i < b.size(); ++i) EXPECT_EQ(b.get(i), size() * (size() + 1) / 2.0);
}

TEST(CallerDrives, AnAsyncOpsWaitRunsItOnTheWaitingThread) {
  if (!testing::threads_multiple()) GTEST_SKIP() << "needs MPI_THREAD_MULTIPLE";
  const std::thread::id me = std::this_thread::get_id();
  // While kolo's thread is held in a cycle, the op stays new: its wait finds it untaken and drives it.
  for (int i = 0; i < 3; ++i) {
    Buffer b(DataType::kFloat32, {3});
    std::thread::id ran_on;
    {
      testing::HeldKolosThread held("drives.held." + std::to_string(i), 0.1);
      const Handle h = sum_async("drives.async", &b, &ran_on);
      EXPECT_TRUE(wait(h).ok());
      EXPECT_NE(held.kolos_thread(), me);
    }
    expect_summed(b);
    EXPECT_EQ(ran_on, me) << "round " << i;
  }
  // Waited on by another thread than the one that submitted it: that thread runs it.
  Buffer b(DataType::kFloat32, {5});
  std::thread::id ran_on, waiter;
  {
    testing::HeldKolosThread held("drives.held.other", 0.1);
    const Handle h = sum_async("drives.async.other", &b, &ran_on);
    std::thread t([&] {
      waiter = std::this_thread::get_id();
      EXPECT_TRUE(wait(h).ok());
    });
    t.join();
  }
  expect_summed(b);
  EXPECT_EQ(ran_on, waiter);
}

TEST(CallerDrives, ASmallAsyncOpWaitedForWithinTheCycleTimeRunsOnTheWaitingThread) {
  if (!testing::threads_multiple()) GTEST_SKIP() << "needs MPI_THREAD_MULTIPLE";
  // Its push leaves kolo's thread asleep for up to the cycle time (here long): the wait takes it over.
  ScopedSettings long_cycles(Settings{{"KOLO_CYCLE_TIME_MS", "3000"}});
  const std::thread::id me = std::this_thread::get_id();
  for (int i = 0; i < 5; ++i) {
    Buffer b(DataType::kFloat32, {3});
    std::thread::id ran_on;
    const Handle h = sum_async("drives.soon", &b, &ran_on);
    EXPECT_TRUE(wait(h).ok());
    expect_summed(b);
    EXPECT_EQ(ran_on, me) << "round " << i;
  }
  // Over KOLO_SMALL_OP_BYTES it wakes kolo's thread, which usually takes it up first; its value is the same.
  Buffer large(DataType::kFloat32, {1000});
  std::thread::id ran_on;
  EXPECT_TRUE(wait(sum_async("drives.not.soon", &large, &ran_on)).ok());
  expect_summed(large);
}

TEST(CallerDrives, AnAsyncOpEndedBeforeItsWaitIsKolosThreads) {
  if (!testing::threads_multiple()) GTEST_SKIP() << "needs MPI_THREAD_MULTIPLE";
  const std::thread::id me = std::this_thread::get_id();
  for (int i = 0; i < 3; ++i) {
    Buffer b(DataType::kFloat32, {3});
    std::thread::id ran_on;
    const Handle h = sum_async("drives.polled", &b, &ran_on);
    while (!poll(h).has_value()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_TRUE(wait(h).ok());
    expect_summed(b);
    EXPECT_NE(ran_on, me);
  }
}

TEST(CallerDrives, AWaitWithATimeoutGivesUpOnTimeThenAWaitEndsIt) {
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks (one of them late)";
  const bool late_rank = rank() == size() - 1;
  // A bounded wait drives nothing (a cycle could outlast its bound): kolo's thread has the op meanwhile.
  Buffer b(DataType::kFloat32, {3});
  std::thread::id ran_on;
  if (late_rank) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const Handle h = sum_async("drives.timeout", &b, &ran_on);
  if (!late_rank) {
    EXPECT_EQ(wait_for(h, 0.05).code(), StatusCode::kTimeout);
  }
  EXPECT_TRUE(wait(h).ok());
  expect_summed(b);
}

TEST(CallerDrives, AnOpOverSixtyFourKibRunsOnKolosThread) {
  if (!testing::threads_multiple()) GTEST_SKIP() << "needs MPI_THREAD_MULTIPLE";
  ScopedSettings through_mpi(Settings{{"KOLO_SHARED_MEMORY", "0"}});
  // Too large to ride, but its nonblocking allreduce gives up on a lost peer: the caller's.
  for (int i = 0; i < 3; ++i) EXPECT_EQ(reduce_on("drives.medium", true, 16384), std::this_thread::get_id());
  // Over 64 KiB: the blocking MPI_Allreduce, which would keep a caller for ever if a peer were lost in it;
  // kolo's thread is the one that may be left there.
  for (int i = 0; i < 3; ++i) EXPECT_NE(reduce_on("drives.large", true, 16385), std::this_thread::get_id());
}

TEST(CallerDrives, ThroughSharedMemoryEverySizeRunsOnTheCallersThread) {
  if (!testing::threads_multiple()) GTEST_SKIP() << "needs MPI_THREAD_MULTIPLE";
  if (size() < 2 || local_size() != size()) GTEST_SKIP() << "needs 2 ranks or more, every one on this host";
  // Every wait of the shared-memory allreduce gives up on a lost peer, whatever its size.
  for (int64_t elements : {3, 16385, 1 << 20}) {
    EXPECT_EQ(reduce_on("drives.shm." + std::to_string(elements), true, elements), std::this_thread::get_id());
  }
}

TEST(CallerDrives, BesideAnotherOpInFlightTheCallerStillRunsIt) {
  if (!testing::threads_multiple()) GTEST_SKIP() << "needs MPI_THREAD_MULTIPLE";
  if (size() < 2) GTEST_SKIP() << "needs 2 ranks";
  // Rank 0's other op stays in flight until the others submit it, after the blocking call: rank 0's
  // caller runs the cycles meanwhile, and leaves the other op to kolo's thread.
  for (int i = 0; i < 5; ++i) {
    Buffer other(DataType::kFloat32, {1});
    other.set(0, rank() + 1.0);
    Handle pending;
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    if (rank() == 0) pending = allreduce_async("drives.other", other.view(), other.view(), sum);
    EXPECT_EQ(reduce_on("drives.beside", true), std::this_thread::get_id());
    if (rank() != 0) pending = allreduce_async("drives.other", other.view(), other.view(), sum);
    EXPECT_TRUE(wait(pending).ok());
    EXPECT_EQ(other.get(0), size() * (size() + 1) / 2.0);
  }
}

TEST(CallerDrives, OpsInFlightOnEveryRankEndBesideTheDrivenOne) {
  if (!testing::threads_multiple()) GTEST_SKIP() << "needs MPI_THREAD_MULTIPLE";
  // Async ops every rank has submitted, the last of them larger than a rider: the caller's cycles may
  // run them with its own (fused), or kolo's thread does; each exact either way.
  for (int i = 0; i < 5; ++i) {
    std::vector<Buffer> others;
    std::vector<Handle> pending;
    for (int64_t elements : {1, 7, 5000}) {
      others.emplace_back(DataType::kFloat32, std::vector<int64_t>{elements});
      for (size_t j = 0; j < others.back().size(); ++j) others.back().set(j, rank() + 1.0);
    }
    AllreduceOptions sum;
    sum.op = ReduceOp::kSum;
    for (size_t k = 0; k < others.size(); ++k) {
      pending.push_back(allreduce_async("drives.many." + std::to_string(k), others[k].view(), others[k].view(), sum));
    }
    EXPECT_EQ(reduce_on("drives.among", true), std::this_thread::get_id());
    for (size_t k = 0; k < others.size(); ++k) {
      EXPECT_TRUE(wait(pending[k]).ok());
      for (size_t j = 0; j < others[k].size(); ++j) EXPECT_EQ(others[k].get(j), size() * (size() + 1) / 2.0);
    }
  }
}

TEST(CallerDrives, OffKolosThreadRunsEveryOp) {
  ScopedSettings off(Settings{{"KOLO_CALLER_DRIVES", "0"}});
  for (int i = 0; i < 5; ++i) {
    EXPECT_NE(reduce_on("drives.off", true), std::this_thread::get_id());
    EXPECT_NE(reduce_on("drives.off.async", false), std::this_thread::get_id());
  }
}

// Every op and scaling that rides, riding (a recurring name) and not (KOLO_SMALL_OP_BYTES=0): the same
// exact values.
void small_ops_exact(const std::string& tag) {
  const int n = size();
  for (int step = 0; step < 3; ++step) {  // the first negotiates through rank 0, the others ride
    for (const ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct}) {
      AllreduceOptions o;
      o.op = op;
      o.prescale_factor = op == ReduceOp::kSum ? 2.0 : 1.0;
      o.postscale_factor = op == ReduceOp::kAverage ? 3.0 : 1.0;
      std::vector<double> d = {rank() + 1.0, -(rank() + 1.0)};
      std::vector<int32_t> i = {rank() + 1, 7 * (rank() + 1)};
      const std::string name = tag + "." + std::to_string(static_cast<int>(op));
      ASSERT_TRUE(allreduce(name + ".f64", cpu_view(d), cpu_view(d), o).ok());
      ASSERT_TRUE(allreduce(name + ".i32", cpu_view(i), cpu_view(i), o).ok());
      double sum = n * (n + 1) / 2.0, product = 1;
      for (int r = 1; r <= n; ++r) product *= r;
      switch (op) {
        case ReduceOp::kSum:
          EXPECT_EQ(d, (std::vector<double>{2 * sum, -2 * sum}));
          EXPECT_EQ(i, (std::vector<int32_t>{static_cast<int32_t>(2 * sum), static_cast<int32_t>(14 * sum)}));
          break;
        case ReduceOp::kAverage:  // floats times 3/n; integers times 3, then divided by n, truncating
          EXPECT_EQ(d, (std::vector<double>{sum * (3.0 / n), -sum * (3.0 / n)}));
          EXPECT_EQ(i, (std::vector<int32_t>{static_cast<int32_t>(3 * sum) / n, static_cast<int32_t>(21 * sum) / n}));
          break;
        case ReduceOp::kMin:
          EXPECT_EQ(d, (std::vector<double>{1, -static_cast<double>(n)}));
          EXPECT_EQ(i, (std::vector<int32_t>{1, 7}));
          break;
        case ReduceOp::kMax:
          EXPECT_EQ(d, (std::vector<double>{static_cast<double>(n), -1}));
          EXPECT_EQ(i, (std::vector<int32_t>{n, 7 * n}));
          break;
        default:
          EXPECT_EQ(d, (std::vector<double>{product, n % 2 ? -product : product}));
          break;
      }
    }
  }
}

TEST(SmallOps, RidingOnTheNegotiationGivesTheCpuPathsValues) { small_ops_exact("ride"); }

// Small allreduces go by recursive doubling, where partners combine the lower rank's block first, and
// large ones by kolo's ring, where each block is reduced on one rank and copied: every rank ends with the
// same bytes even where the reduction does not commute to the bit (min and max with NaNs), riding or not.
TEST(SmallOps, EveryRankGetsTheSameBitsWithNaNs) {
  // 20 B rides; 16 KiB does not; 280 KB goes by the ring
  for (const int64_t elements : {int64_t{5}, int64_t{4096}, int64_t{70000}}) {
    for (const ReduceOp op : {ReduceOp::kMin, ReduceOp::kMax}) {
      for (int step = 0; step < 2; ++step) {
        std::vector<float> v(static_cast<size_t>(elements));
        for (size_t i = 0; i < v.size(); ++i) {
          v[i] = i % 5 == static_cast<size_t>(rank()) % 5 ? std::nanf("") : static_cast<float>(rank() + 1 + i % 7);
        }
        AllreduceOptions o;
        o.op = op;
        const std::string name = "nan." + std::to_string(elements) + "." + std::to_string(static_cast<int>(op));
        ASSERT_TRUE(allreduce(name, cpu_view(v), cpu_view(v), o).ok());
        std::vector<float> all(v.size() * static_cast<size_t>(size()));
        MPI_Allgather(v.data(), static_cast<int>(v.size() * sizeof(float)), MPI_BYTE, all.data(),
                      static_cast<int>(v.size() * sizeof(float)), MPI_BYTE, MPI_COMM_WORLD);
        for (int r = 0; r < size(); ++r) {
          EXPECT_EQ(std::memcmp(all.data() + r * v.size(), v.data(), v.size() * sizeof(float)), 0)
              << name << ": rank " << r << " got other bits than rank " << rank();
        }
        // Where no rank put a NaN, the exact value.
        if (size() < 5) {
          EXPECT_EQ(v[4], op == ReduceOp::kMin ? 1.0f + 4 : static_cast<float>(size() + 4));
        }
      }
    }
  }
}

TEST(SmallOps, WithoutRidingTheSameValues) {
  ScopedSettings off(Settings{{"KOLO_SMALL_OP_BYTES", "0"}});
  small_ops_exact("noride");
}

}  // namespace
}  // namespace kolo
