// Reduces a segment over every rank at once (mpi_allreduce.cc's flat path).
#pragma once

#include <mpi.h>

#include <cstdint>
#include <vector>

#include "comm/mpi/segment_reducer.h"

namespace kolo {

class FlatReducer : public SegmentReducer {
 public:
  // A small segment is reduced by recursive doubling over point-to-point messages, each wait giving up
  // on a lost peer (recursive_doubling.h), so that a caller's thread may run it; faster than Open MPI's
  // MPI_Iallreduce at these sizes (benchmarks/README.md, Small ops). On every rank alike, whichever
  // thread runs it. Larger ones, on one host, by kolo's ring, whose waits leave the core to the
  // framework's threads (ring_allreduce.h); across hosts by MPI_Allreduce, whose algorithms suit
  // the network (benchmarks/README.md, Across hosts).
  static constexpr int64_t kSmallBytes = 64 << 10;
  FlatReducer(MPI_Comm comm, bool ring) : comm_(comm), ring_(ring) {
    MPI_Comm_rank(comm, &rank_);
    MPI_Comm_size(comm, &size_);
  }
  Status start(const void* send, void* recv, int count, MPI_Datatype type, MPI_Op op) override;

 private:
  static constexpr int kTag = 2;  // on the data communicator; Adasum's messages there have their own
  MPI_Comm comm_;
  bool ring_;
  int rank_ = 0, size_ = 1;
  std::vector<char> scratch_;
};

}  // namespace kolo
