#include "comm/mpi/ring_allreduce.h"

#include <climits>
#include <string>

#include "comm/mpi/point_to_point.h"

namespace kolo {
namespace {

// Block i of `data`.
struct Blocks {
  char* data;
  int64_t count;
  size_t elem_bytes;
  int size;
  char* at(int i) const { return data + static_cast<size_t>(block_start(count, size, i)) * elem_bytes; }
  size_t bytes(int i) const { return static_cast<size_t>(block_count(count, size, i)) * elem_bytes; }
  int wrap(int i) const { return ((i % size) + size) % size; }
};

}  // namespace

size_t ring_scratch_bytes(int64_t count, size_t elem_bytes, int size) {
  return static_cast<size_t>(block_count(count, size, 0)) * elem_bytes;
}

Status ring_reduce_scatter(MPI_Comm comm, int rank, int size, int tag, char* data, char* scratch, int64_t count,
                           size_t elem_bytes, const CombineBytes& combine, const char* what) {
  if (size == 1) return Status::OK();
  if (ring_scratch_bytes(count, elem_bytes, size) > static_cast<size_t>(INT_MAX)) {
    return Status::Internal(std::string(what) + ": block too large");
  }
  const Blocks b{data, count, elem_bytes, size};
  // Block i starts at rank i+1 and goes round, each rank combining its own into it, to end at rank i:
  // at step s this rank passes on block rank-1-s and combines block rank-2-s from the left into its copy.
  for (int s = 0; s < size - 1; ++s) {
    const int out = b.wrap(rank - 1 - s);
    const int in = b.wrap(rank - 2 - s);
    Status st = send_receive_bytes(comm, b.wrap(rank - 1), b.wrap(rank + 1), tag, b.at(out), b.bytes(out), scratch,
                                   b.bytes(in), what, WaitPace::kTransfer);
    if (!st.ok()) return st;
    combine(scratch, b.at(in), b.bytes(in));
  }
  return Status::OK();
}

Status ring_allgather(MPI_Comm comm, int rank, int size, int tag, char* data, int64_t count, size_t elem_bytes,
                      const char* what) {
  if (size == 1) return Status::OK();
  const Blocks b{data, count, elem_bytes, size};
  // The blocks travel round the ring, straight into place: at step s this rank passes on block rank-s.
  for (int s = 0; s < size - 1; ++s) {
    const int out = b.wrap(rank - s);
    const int in = b.wrap(rank - 1 - s);
    Status st = send_receive_bytes(comm, b.wrap(rank - 1), b.wrap(rank + 1), tag, b.at(out), b.bytes(out), b.at(in),
                                   b.bytes(in), what, WaitPace::kTransfer);
    if (!st.ok()) return st;
  }
  return Status::OK();
}

Status ring_allreduce(MPI_Comm comm, int rank, int size, int tag, char* data, char* scratch, int64_t count,
                      size_t elem_bytes, const CombineBytes& combine, const char* what) {
  Status s = ring_reduce_scatter(comm, rank, size, tag, data, scratch, count, elem_bytes, combine, what);
  if (!s.ok()) return s;
  return ring_allgather(comm, rank, size, tag, data, count, elem_bytes, what);
}

}  // namespace kolo
