// Reduces a segment over every rank at once (mpi_allreduce.cc's flat path).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "comm/allreduce_choice.h"
#include "comm/mpi/segment_reducer.h"

namespace kolo {

class FlatReducer : public SegmentReducer {
 public:
  // Each segment by what comm/allreduce_choice.h chooses for it, flat: recursive doubling
  // (recursive_doubling.h: its waits give up on a lost peer, so a caller's thread may run it), kolo's
  // ring (ring_allreduce.h) or MPI_Allreduce.
  FlatReducer(MPI_Comm comm, const JobShape& job) : comm_(comm), job_(job) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
  }
  Status start(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op) override;

 private:
  static constexpr int kTag = 2;  // on the data communicator; Adasum's messages there have their own
  MPI_Comm comm_;
  JobShape job_;
  int rank_ = 0, size_ = 1;
  std::vector<char> scratch_;
};

}  // namespace kolo
