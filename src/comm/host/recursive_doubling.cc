#include "comm/host/recursive_doubling.h"

#include <climits>
#include <cstring>
#include <utility>
#include <string>


namespace kolo {

Status recursive_doubling_allreduce(Group& group, int tag, char* data, char* scratch, size_t bytes,
                                    const CombineBytes& combine, const char* what) {
  const int rank = group.rank(), size = group.size();
  if (bytes > static_cast<size_t>(INT_MAX)) return Status::Internal(std::string(what) + ": block too large");
  int doubling = 1;
  while (doubling * 2 <= size) doubling *= 2;
  const int extra = size - doubling;  // ranks [doubling, size) fold into ranks [0, extra)
  if (rank >= doubling) {
    Status s = group.send(rank - doubling, tag, data, bytes, what);
    if (!s.ok()) return s;
    return group.receive(rank - doubling, tag, data, bytes, what);
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
    Status s = group.receive(rank + doubling, tag, theirs, bytes, what);
    if (!s.ok()) return s;
    combine_with(rank + doubling);
  }
  for (int mask = 1; mask < doubling; mask <<= 1) {
    Status s = group.exchange(rank ^ mask, rank ^ mask, tag, mine, bytes, theirs, bytes, what);
    if (!s.ok()) return s;
    combine_with(rank ^ mask);
  }
  if (mine != data) std::memcpy(data, mine, bytes);
  if (rank < extra) return group.send(rank + doubling, tag, data, bytes, what);
  return Status::OK();
}

}  // namespace kolo
