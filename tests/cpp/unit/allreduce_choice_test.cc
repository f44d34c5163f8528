// comm/allreduce_choice.h's table: what reduces a call, for each kind of job and setting, as the job starts.
#include "comm/allreduce_choice.h"

#include <gtest/gtest.h>

namespace kolo {
namespace {

using A = AllreduceAlgorithm;
using H = HierarchySetting;
constexpr DeviceType kCpu = DeviceType::kCPU;
constexpr DeviceType kGpu = DeviceType::kCUDA;
constexpr int64_t kMiB = 1 << 20;

struct Row {
  DeviceType device;
  int64_t bytes;
  int hosts;
  bool homogeneous;
  bool thread_multiple;
  H setting;
  bool autotune;
  A expected;
  bool host_shm = false;  // each host's ranks share kolo's segment
};

TEST(AllreduceChoice, WhatReducesACallAsTheJobStarts) {
  const Row rows[] = {
      // One host with its shared memory: through it at every size, flat or hierarchical alike.
      {kCpu, 4, 1, true, true, H::kAuto, false, A::kSharedMemory, true},
      {kCpu, 100 * kMiB, 1, true, true, H::kAuto, false, A::kSharedMemory, true},
      {kCpu, kMiB, 1, true, true, H::kOn, false, A::kSharedMemory, true},
      {kCpu, kMiB, 1, true, false, H::kAuto, false, A::kSharedMemory, true},
      // Across hosts the segment carries only the stages inside each host: the choice is as without it.
      {kCpu, kMiB, 2, true, true, H::kAuto, false, A::kHierarchicalPairwise, true},
      {kCpu, 1024, 2, true, true, H::kAuto, false, A::kRecursiveDoubling, true},
      {kGpu, 4, 1, true, true, H::kAuto, false, A::kDeviceFlat, true},
      // One host without it (one rank, KOLO_SHARED_MEMORY=0, or no room): small by recursive doubling,
      // larger by kolo's ring; hierarchical only when asked.
      {kCpu, 4, 1, true, true, H::kAuto, false, A::kRecursiveDoubling},
      {kCpu, kSmallAllreduceBytes, 1, true, true, H::kAuto, false, A::kRecursiveDoubling},
      {kCpu, kSmallAllreduceBytes + 1, 1, true, true, H::kAuto, false, A::kRing},
      {kCpu, 100 * kMiB, 1, true, true, H::kAuto, true, A::kRing},
      {kCpu, kMiB, 1, true, true, H::kOn, false, A::kHierarchicalInsideHost},
      // 2 hosts x 4 ranks: a 1 MB float32 gradient crosses pairwise; small calls stay flat.
      {kCpu, kMiB, 2, true, true, H::kAuto, false, A::kHierarchicalPairwise},
      {kCpu, 1024, 2, true, true, H::kAuto, false, A::kRecursiveDoubling},
      {kCpu, kMiB, 2, true, true, H::kOff, false, A::kMpiAllreduce},
      {kCpu, kMiB, 2, false, true, H::kAuto, false, A::kMpiAllreduce},  // 3 ranks on one host, 1 on the other
      {kCpu, kMiB, 2, false, true, H::kOn, false, A::kMpiAllreduce},    // asked, but it cannot run (warned)
      // More hosts: kolo's ring across them, on a lane of its own where MPI allows several threads.
      {kCpu, kMiB, 4, true, true, H::kAuto, false, A::kHierarchicalRingOnLane},
      {kCpu, kMiB, 4, true, false, H::kAuto, false, A::kHierarchicalRingInTurn},
      {kCpu, kMiB, 4, true, true, H::kAuto, true, A::kHierarchicalRingOnLane},  // autotune starts there
      // GPU tensors: flat unless asked, or while KOLO_AUTOTUNE tries hierarchical.
      {kGpu, 4, 1, true, true, H::kAuto, false, A::kDeviceFlat},
      {kGpu, kMiB, 2, true, true, H::kAuto, false, A::kDeviceFlat},
      {kGpu, kMiB, 2, true, true, H::kAuto, true, A::kDeviceHierarchical},
      {kGpu, kMiB, 2, true, true, H::kOn, false, A::kDeviceHierarchical},
      {kGpu, kMiB, 1, true, true, H::kOn, false, A::kDeviceHierarchical},
      {kGpu, kMiB, 2, false, true, H::kOn, false, A::kDeviceFlat},
      {kGpu, kMiB, 2, true, true, H::kOff, true, A::kDeviceFlat},
  };
  for (const Row& r : rows) {
    const JobShape job{r.hosts, r.homogeneous, r.thread_multiple, r.host_shm};
    const AllreduceSettings settings{r.setting, r.autotune};
    const A chosen = choose_allreduce(r.device, r.bytes, job, starts_hierarchical(r.device, job, settings));
    EXPECT_EQ(chosen, r.expected) << (r.device == kCpu ? "CPU " : "GPU ") << r.bytes << " bytes on " << r.hosts
                                  << " hosts: chose " << algorithm_name(chosen) << ", expected "
                                  << algorithm_name(r.expected);
  }
}

TEST(AllreduceChoice, AutotuneChoosesTheHierarchyOnlyWhereBothCanRunAndNoneWasGiven) {
  EXPECT_TRUE(tunes_hierarchy({2, true, true}, {H::kAuto, true}));
  EXPECT_FALSE(tunes_hierarchy({2, true, true}, {H::kAuto, false}));  // no autotune
  EXPECT_FALSE(tunes_hierarchy({2, true, true}, {H::kOn, true}));     // given: fixed
  EXPECT_FALSE(tunes_hierarchy({2, true, true}, {H::kOff, true}));
  EXPECT_FALSE(tunes_hierarchy({1, true, true}, {H::kAuto, true}));   // one host: nothing to choose
  EXPECT_FALSE(tunes_hierarchy({2, false, true}, {H::kAuto, true}));  // hierarchical cannot run
  // Once it chose flat, a large CPU call on 2 hosts goes by MPI_Allreduce, a GPU call by one NCCL allreduce.
  EXPECT_EQ(choose_allreduce(kCpu, kMiB, {2, true, true}, false), A::kMpiAllreduce);
  EXPECT_EQ(choose_allreduce(kGpu, kMiB, {2, true, true}, false), A::kDeviceFlat);
}

TEST(AllreduceChoice, EveryAlgorithmHasAName) {
  EXPECT_STREQ(algorithm_name(A::kHierarchicalPairwise), "hierarchical, pairwise across 2 hosts");
  EXPECT_TRUE(is_hierarchical(A::kHierarchicalInsideHost));
  EXPECT_TRUE(is_hierarchical(A::kDeviceHierarchical));
  EXPECT_FALSE(is_hierarchical(A::kRing));
  EXPECT_FALSE(is_hierarchical(A::kDeviceFlat));
}

}  // namespace
}  // namespace kolo
