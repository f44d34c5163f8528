#include "comm/mpi/recursive_doubling.h"

#include <climits>
#include <cstring>
#include <utility>
#include <string>

#include "comm/mpi/mpi_status.h"

namespace kolo {
namespace {

Status send(MPI_Comm comm, int peer, int tag, const char* data, int bytes, const char* what) {
  MPI_Request req = MPI_REQUEST_NULL;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Isend(data, bytes, MPI_BYTE, peer, tag, comm, &req), what);
  return mpi_wait(&req, what);
}

Status receive(MPI_Comm comm, int peer, int tag, char* data, int bytes, const char* what) {
  MPI_Request req = MPI_REQUEST_NULL;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Irecv(data, bytes, MPI_BYTE, peer, tag, comm, &req), what);
  return mpi_wait(&req, what);
}

Status exchange(MPI_Comm comm, int peer, int tag, const char* mine, char* theirs, int bytes, const char* what) {
  MPI_Request recv = MPI_REQUEST_NULL, sent = MPI_REQUEST_NULL;
  KOLO_MPI_RETURN_IF_ERROR(MPI_Irecv(theirs, bytes, MPI_BYTE, peer, tag, comm, &recv), what);
  KOLO_MPI_RETURN_IF_ERROR(MPI_Isend(mine, bytes, MPI_BYTE, peer, tag, comm, &sent), what);
  Status s = mpi_wait(&recv, what);
  if (!s.ok()) return s;
  return mpi_wait(&sent, what);
}

}  // namespace

Status recursive_doubling_allreduce(MPI_Comm comm, int rank, int size, int tag, char* data, char* scratch,
                                    size_t bytes, const CombineBytes& combine, const char* what) {
  if (bytes > static_cast<size_t>(INT_MAX)) return Status::Internal(std::string(what) + ": block too large");
  const int n = static_cast<int>(bytes);
  int doubling = 1;
  while (doubling * 2 <= size) doubling *= 2;
  const int extra = size - doubling;  // ranks [doubling, size) fold into ranks [0, extra)
  if (rank >= doubling) {
    Status s = send(comm, rank - doubling, tag, data, n, what);
    if (!s.ok()) return s;
    return receive(comm, rank - doubling, tag, data, n, what);
  }
  // The running result is in `mine`; the partner's block arrives in `theirs`. The lower rank's block
  // goes first: when this rank is the lower, the result lands in `theirs`, and the two swap.
  char* mine = data;
  char* theirs = scratch;
  auto combine_with = [&](int peer) {
    if (peer > rank) {
      combine(mine, theirs, bytes);
      std::swap(mine, theirs);
    } else {
      combine(theirs, mine, bytes);
    }
  };
  if (rank < extra) {
    Status s = receive(comm, rank + doubling, tag, theirs, n, what);
    if (!s.ok()) return s;
    combine_with(rank + doubling);
  }
  for (int mask = 1; mask < doubling; mask <<= 1) {
    Status s = exchange(comm, rank ^ mask, tag, mine, theirs, n, what);
    if (!s.ok()) return s;
    combine_with(rank ^ mask);
  }
  if (mine != data) std::memcpy(data, mine, bytes);
  if (rank < extra) return send(comm, rank + doubling, tag, data, n, what);
  return Status::OK();
}

}  // namespace kolo
