// Reduces segments through the host's shared memory (comm/shm/shm_group.h): allreduce.cc's path where
// every rank of the instance is on one host, and HierarchicalReducer's stages inside a host.
#pragma once

#include "comm/context.h"
#include "comm/host/segment_reducer.h"
#include "comm/shm/shm_group.h"

namespace kolo {

// The reduction of (dtype, op) over the slots' inputs: kolo's vectorized sum where it has one
// (cpu/sum_inputs.h), else input by input as Open MPI reduces (cpu/reduce.h). Made on the stack per call:
// no allocation.
class HostReduceInto : public ReduceInto {
 public:
  HostReduceInto(DataType dtype, ReduceOp op) : dtype_(dtype), op_(op) {}
  void operator()(const char* const* inputs, int n, char* out, size_t bytes) const override;
  size_t elem() const { return dtype_size(dtype_); }

 private:
  DataType dtype_;
  ReduceOp op_;
};

// The group a collective of rows of `row_bytes` goes through where every rank of `context` is on one host:
// null where the ranks span hosts, the host has no group, or a round cannot hold a row per rank.
ShmGroup* on_one_host_shm(const Context& context, int64_t row_bytes);

class ShmReducer : public SegmentReducer {
 public:
  explicit ShmReducer(ShmGroup* group) : group_(group) {}
  Status start(const void* send, void* recv, int count, DataType dtype, ReduceOp op) override;

 private:
  ShmGroup* group_;
};

}  // namespace kolo
