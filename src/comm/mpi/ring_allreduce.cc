#include "comm/mpi/ring_allreduce.h"

#include <climits>
#include <string>

#include "comm/mpi/mpi_status.h"

namespace kolo {
namespace {

// Block i of n: counts differ by at most one element, so any count works (blocks may be empty).
int64_t block_count(int64_t count, int size, int i) { return count / size + (i < count % size ? 1 : 0); }
int64_t block_start(int64_t count, int size, int i) {
  return i * (count / size) + (i < count % size ? i : count % size);
}

// Sends `out_bytes` at `out` to `right` while receiving `in_bytes` from `left` into `in`.
Status shift(MPI_Comm comm, int left, int right, int tag, const char* out, size_t out_bytes, char* in,
             size_t in_bytes, const char* what) {
  MPI_Request recv = MPI_REQUEST_NULL, sent = MPI_REQUEST_NULL;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Irecv(in, static_cast<int>(in_bytes), MPI_BYTE, left, tag, comm, &recv), what);
  KOLO_MPI_RETURN_IF_ERROR(MPI_Isend(out, static_cast<int>(out_bytes), MPI_BYTE, right, tag, comm, &sent), what);
  Status s = mpi_wait(&recv, what, WaitPace::kTransfer);
  if (!s.ok()) return s;
  return mpi_wait(&sent, what, WaitPace::kTransfer);
}

}  // namespace

size_t ring_scratch_bytes(int64_t count, size_t elem_bytes, int size) {
  return static_cast<size_t>(block_count(count, size, 0)) * elem_bytes;
}

Status ring_allreduce(MPI_Comm comm, int rank, int size, int tag, char* data, char* scratch, int64_t count,
                      size_t elem_bytes, const CombineBytes& combine, const char* what) {
  if (size == 1) return Status::OK();
  if (ring_scratch_bytes(count, elem_bytes, size) > static_cast<size_t>(INT_MAX)) {
    return Status::Internal(std::string(what) + ": block too large");
  }
  const int right = (rank + 1) % size;
  const int left = (rank + size - 1) % size;
  auto block = [&](int i) { return data + static_cast<size_t>(block_start(count, size, i)) * elem_bytes; };
  auto bytes = [&](int i) { return static_cast<size_t>(block_count(count, size, i)) * elem_bytes; };
  // Reduce-scatter: at step s this rank passes on block rank-s (its own, then what it has combined)
  // and combines block rank-s-1 from the left into its own copy; after n-1 steps it holds block
  // rank+1 reduced over every rank.
  for (int s = 0; s < size - 1; ++s) {
    const int out = ((rank - s) % size + size) % size;
    const int in = ((rank - s - 1) % size + size) % size;
    Status st = shift(comm, left, right, tag, block(out), bytes(out), scratch, bytes(in), what);
    if (!st.ok()) return st;
    combine(scratch, block(in), bytes(in));
  }
  // Allgather: the reduced blocks travel round the ring, straight into place.
  for (int s = 0; s < size - 1; ++s) {
    const int out = ((rank + 1 - s) % size + size) % size;
    const int in = ((rank - s) % size + size) % size;
    Status st = shift(comm, left, right, tag, block(out), bytes(out), block(in), bytes(in), what);
    if (!st.ok()) return st;
  }
  return Status::OK();
}

}  // namespace kolo
