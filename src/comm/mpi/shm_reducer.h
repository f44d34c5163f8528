// Reduces segments through the host's shared memory (comm/shm/shm_group.h): mpi_allreduce.cc's path
// where every rank of the communicator is on one host, and HierarchicalReducer's stages inside a host.
#pragma once

#include <mpi.h>

#include "comm/mpi/mpi_context.h"
#include "comm/mpi/segment_reducer.h"
#include "comm/shm/shm_group.h"

namespace kolo {

// The reduction of an MPI (type, op) over the slots' inputs: kolo's vectorized sum where it has one
// (cpu/sum_inputs.h), else MPI_Reduce_local input by input. Made on the stack per call: no allocation.
class MpiReduceInto : public ReduceInto {
 public:
  MpiReduceInto(MPI_Datatype type, MPI_Op op);
  void operator()(const char* const* inputs, int n, char* out, size_t bytes) const override;
  size_t elem() const { return elem_; }

 private:
  MPI_Datatype type_;
  MPI_Op op_;
  size_t elem_ = 1;
  int fast_dtype_ = -1;  // a DataType sum_inputs has a loop for, or -1
};

// The group a collective of rows of `row_bytes` goes through where every rank of `mpi` is on one host:
// null where the ranks span hosts, the host has no group, or a round cannot hold a row per rank.
ShmGroup* on_one_host_shm(const MpiContext& mpi, int64_t row_bytes);

class ShmReducer : public SegmentReducer {
 public:
  explicit ShmReducer(ShmGroup* group) : group_(group) {}
  Status start(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op) override;

 private:
  ShmGroup* group_;
};

}  // namespace kolo
