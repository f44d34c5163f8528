// Which algorithm reduces an allreduce: the one place that answers it, as a pure function of the call
// (device, bytes) and the job (hosts, ranks per host, MPI's thread level, KOLO_HIERARCHICAL_ALLREDUCE,
// KOLO_AUTOTUNE and its latest choice). The runtime asks it which collectives to build; the collectives
// ask it which path each call and segment takes, and only execute. tests/cpp/unit/allreduce_choice_test.cc
// is its table. Why each rule holds is measured in benchmarks/README.md ("Small ops", "Across hosts").
#pragma once

#include <cstdint>

#include "comm/topology.h"
#include "kolo/tensor.h"

namespace kolo {

enum class AllreduceAlgorithm {
  kSharedMemory,            // CPU, every rank on one host: kolo's shared-memory segment, any size
  kRecursiveDoubling,       // CPU, small: point-to-point rounds, each wait giving up on a lost peer
  kRing,                    // CPU, flat on one host: kolo's ring, whose waits leave the core to the framework
  kMpiAllreduce,            // CPU, flat across hosts: MPI's own algorithms, which suit the network
  kHierarchicalInsideHost,  // CPU, hierarchical on one host: kolo's ring inside it, nothing crosses
  kHierarchicalPairwise,    // CPU, hierarchical on 2 hosts: each block exchanged with the other host's
  kHierarchicalRingOnLane,  // CPU, hierarchical on 3+ hosts: kolo's ring across hosts on a thread of its own
  kHierarchicalRingInTurn,  // the same without MPI_THREAD_MULTIPLE: on the engine's thread, a segment at a time
  kDeviceFlat,              // GPU: one NCCL allreduce over every rank
  kDeviceHierarchical,      // GPU: inside each host, across hosts, inside each host again
};

// At most this many bytes a CPU allreduce (a call, or a segment of one) goes by recursive doubling,
// faster than Open MPI's MPI_Iallreduce there, on every rank alike whichever thread runs it.
constexpr int64_t kSmallAllreduceBytes = 64 << 10;

// KOLO_HIERARCHICAL_ALLREDUCE: auto unless given.
enum class HierarchySetting { kAuto, kOn, kOff };

struct JobShape {
  int hosts = 1;
  bool homogeneous = true;      // as many ranks on every host (hierarchical allreduce needs it)
  bool thread_multiple = true;  // MPI_THREAD_MULTIPLE
  bool host_shm = false;         // the ranks of each host share kolo's shared-memory segment
};

struct AllreduceSettings {
  HierarchySetting hierarchical = HierarchySetting::kAuto;
  bool autotune = false;  // KOLO_AUTOTUNE
};

JobShape job_shape(const Topology& topology, bool thread_multiple);

// Whether KOLO_AUTOTUNE chooses between flat and hierarchical while the job runs (both are built).
bool tunes_hierarchy(const JobShape& job, const AllreduceSettings& settings);
// Whether the job's allreduce of `device` tensors is hierarchical as it starts. Unless given, CPU
// tensors go hierarchical wherever it can run (each byte crosses between hosts once per host, not once
// per rank); GPU tensors only while KOLO_AUTOTUNE tries it (NCCL's rings and trees already follow the
// hosts, and kolo's hierarchical GPU path has not been measured against them across hosts).
bool starts_hierarchical(DeviceType device, const JobShape& job, const AllreduceSettings& settings);
// What reduces `bytes` (a call; a CPU call's segments are asked again, flat), with the job's allreduce
// hierarchical or flat as it is now (as it started, or as KOLO_AUTOTUNE last chose).
AllreduceAlgorithm choose_allreduce(DeviceType device, int64_t bytes, const JobShape& job, bool hierarchical);

bool is_hierarchical(AllreduceAlgorithm algorithm);
const char* algorithm_name(AllreduceAlgorithm algorithm);

}  // namespace kolo
