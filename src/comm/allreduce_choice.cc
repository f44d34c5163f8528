#include "comm/allreduce_choice.h"

namespace kolo {

JobShape job_shape(const Topology& topology, bool thread_multiple) {
  return JobShape{topology.cross_size, topology.homogeneous, thread_multiple};
}

bool tunes_hierarchy(const JobShape& job, const AllreduceSettings& settings) {
  return settings.autotune && settings.hierarchical == HierarchySetting::kAuto && job.hosts > 1 && job.homogeneous;
}

bool starts_hierarchical(DeviceType device, const JobShape& job, const AllreduceSettings& settings) {
  if (!job.homogeneous || settings.hierarchical == HierarchySetting::kOff) return false;
  if (settings.hierarchical == HierarchySetting::kOn) return true;
  return device == DeviceType::kCPU ? job.hosts > 1 : tunes_hierarchy(job, settings);
}

AllreduceAlgorithm choose_allreduce(DeviceType device, int64_t bytes, const JobShape& job, bool hierarchical) {
  if (device != DeviceType::kCPU) {
    return hierarchical ? AllreduceAlgorithm::kDeviceHierarchical : AllreduceAlgorithm::kDeviceFlat;
  }
  // One host with its shared memory: flags and copies through the segment, every size (flat or
  // "hierarchical" inside one host alike).
  if (job.hosts == 1 && job.host_shm) return AllreduceAlgorithm::kSharedMemory;
  // Small: flat even where allreduce is hierarchical (three stages would cost three latencies for no
  // bandwidth gained).
  if (bytes <= kSmallAllreduceBytes) return AllreduceAlgorithm::kRecursiveDoubling;
  if (!hierarchical) return job.hosts == 1 ? AllreduceAlgorithm::kRing : AllreduceAlgorithm::kMpiAllreduce;
  if (job.hosts == 1) return AllreduceAlgorithm::kHierarchicalInsideHost;
  if (job.hosts == 2) return AllreduceAlgorithm::kHierarchicalPairwise;
  return job.thread_multiple ? AllreduceAlgorithm::kHierarchicalRingOnLane : AllreduceAlgorithm::kHierarchicalRingInTurn;
}

bool is_hierarchical(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllreduceAlgorithm::kHierarchicalInsideHost:
    case AllreduceAlgorithm::kHierarchicalPairwise:
    case AllreduceAlgorithm::kHierarchicalRingOnLane:
    case AllreduceAlgorithm::kHierarchicalRingInTurn:
    case AllreduceAlgorithm::kDeviceHierarchical:
      return true;
    default:
      return false;
  }
}

const char* algorithm_name(AllreduceAlgorithm algorithm) {
  switch (algorithm) {
    case AllreduceAlgorithm::kSharedMemory: return "shared memory";
    case AllreduceAlgorithm::kRecursiveDoubling: return "recursive doubling";
    case AllreduceAlgorithm::kRing: return "ring";
    case AllreduceAlgorithm::kMpiAllreduce: return "MPI_Allreduce";
    case AllreduceAlgorithm::kHierarchicalInsideHost: return "hierarchical, inside the host only";
    case AllreduceAlgorithm::kHierarchicalPairwise: return "hierarchical, pairwise across 2 hosts";
    case AllreduceAlgorithm::kHierarchicalRingOnLane: return "hierarchical, ring across hosts on a lane";
    case AllreduceAlgorithm::kHierarchicalRingInTurn: return "hierarchical, ring across hosts in turn";
    case AllreduceAlgorithm::kDeviceFlat: return "NCCL allreduce";
    case AllreduceAlgorithm::kDeviceHierarchical: return "NCCL, hierarchical";
  }
  return "?";
}

}  // namespace kolo
