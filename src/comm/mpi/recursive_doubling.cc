#include "comm/mpi/recursive_doubling.h"

#include <climits>
#include <cstring>
#include <utility>
#include <string>

#include "comm/mpi/point_to_point.h"

namespace kolo {

Status recursive_doubling_allreduce(MPI_Comm comm, int rank, int size, int tag, char* data, char* scratch,
                                    size_t bytes, const CombineBytes& combine, const char* what, PeerBell* bell) {
  if (bytes > static_cast<size_t>(INT_MAX)) return Status::Internal(std::string(what) + ": block too large");
  int doubling = 1;
  while (doubling * 2 <= size) doubling *= 2;
  const int extra = size - doubling;  // ranks [doubling, size) fold into ranks [0, extra)
  if (rank >= doubling) {
    Status s = send_bytes(comm, rank - doubling, tag, data, bytes, what, WaitPace::kControl, bell);
    if (!s.ok()) return s;
    return receive_bytes(comm, rank - doubling, tag, data, bytes, what, WaitPace::kControl, bell);
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
    Status s = receive_bytes(comm, rank + doubling, tag, theirs, bytes, what, WaitPace::kControl, bell);
    if (!s.ok()) return s;
    combine_with(rank + doubling);
  }
  for (int mask = 1; mask < doubling; mask <<= 1) {
    Status s = send_receive_bytes(comm, rank ^ mask, rank ^ mask, tag, mine, bytes, theirs, bytes, what,
                                  WaitPace::kControl, bell);
    if (!s.ok()) return s;
    combine_with(rank ^ mask);
  }
  if (mine != data) std::memcpy(data, mine, bytes);
  if (rank < extra) return send_bytes(comm, rank + doubling, tag, data, bytes, what, WaitPace::kControl, bell);
  return Status::OK();
}

}  // namespace kolo
