#include "comm/host/ring_allreduce.h"

#include <climits>
#include <string>
#include <vector>

namespace kolo {
namespace {

// Block i of `data` cut as common/blocks.h cuts `count` elements.
struct EvenBlocks {
  char* data;
  int64_t count;
  size_t elem_bytes;
  int size;
  char* at(int i) const { return data + static_cast<size_t>(block_start(count, size, i)) * elem_bytes; }
  size_t bytes(int i) const { return static_cast<size_t>(block_count(count, size, i)) * elem_bytes; }
};

// Block i of `data` holding counts[i] elements, the blocks in order.
struct GivenBlocks {
  char* data;
  std::vector<int64_t> starts;  // elements before block i; starts[size]: all
  size_t elem_bytes;
  char* at(int i) const { return data + static_cast<size_t>(starts[static_cast<size_t>(i)]) * elem_bytes; }
  size_t bytes(int i) const {
    return static_cast<size_t>(starts[static_cast<size_t>(i) + 1] - starts[static_cast<size_t>(i)]) * elem_bytes;
  }
};

int wrap(int i, int size) { return ((i % size) + size) % size; }

template <typename Blocks>
Status reduce_scatter_round(Group& group, int tag, const Blocks& b, char* scratch, const CombineBytes& combine,
                            const char* what) {
  const int rank = group.rank(), size = group.size();
  // Block i starts at rank i+1 and goes round, each rank combining its own into it, to end at rank i:
  // at step s this rank passes on block rank-1-s and combines block rank-2-s from the left into its copy.
  for (int s = 0; s < size - 1; ++s) {
    const int out = wrap(rank - 1 - s, size);
    const int in = wrap(rank - 2 - s, size);
    Status st = group.exchange(wrap(rank - 1, size), wrap(rank + 1, size), tag, b.at(out), b.bytes(out), scratch,
                               b.bytes(in), what, WaitPace::kTransfer);
    if (!st.ok()) return st;
    combine(scratch, b.at(in), b.bytes(in));
  }
  return Status::OK();
}

template <typename Blocks>
Status allgather_round(Group& group, int tag, const Blocks& b, const char* what) {
  const int rank = group.rank(), size = group.size();
  // The blocks travel round the ring, straight into place: at step s this rank passes on block rank-s.
  for (int s = 0; s < size - 1; ++s) {
    const int out = wrap(rank - s, size);
    const int in = wrap(rank - 1 - s, size);
    Status st = group.exchange(wrap(rank - 1, size), wrap(rank + 1, size), tag, b.at(out), b.bytes(out), b.at(in),
                               b.bytes(in), what, WaitPace::kTransfer);
    if (!st.ok()) return st;
  }
  return Status::OK();
}

GivenBlocks given_blocks(char* data, const std::vector<int64_t>& counts, size_t elem_bytes) {
  GivenBlocks b{data, std::vector<int64_t>(counts.size() + 1, 0), elem_bytes};
  for (size_t i = 0; i < counts.size(); ++i) b.starts[i + 1] = b.starts[i] + counts[i];
  return b;
}

}  // namespace

size_t ring_scratch_bytes(int64_t count, size_t elem_bytes, int size) {
  return static_cast<size_t>(block_count(count, size, 0)) * elem_bytes;
}

Status ring_reduce_scatter(Group& group, int tag, char* data, char* scratch, int64_t count, size_t elem_bytes,
                           const CombineBytes& combine, const char* what) {
  if (group.size() == 1) return Status::OK();
  if (ring_scratch_bytes(count, elem_bytes, group.size()) > static_cast<size_t>(INT_MAX)) {
    return Status::Internal(std::string(what) + ": block too large");
  }
  return reduce_scatter_round(group, tag, EvenBlocks{data, count, elem_bytes, group.size()}, scratch, combine, what);
}

Status ring_allgather(Group& group, int tag, char* data, int64_t count, size_t elem_bytes, const char* what) {
  if (group.size() == 1) return Status::OK();
  return allgather_round(group, tag, EvenBlocks{data, count, elem_bytes, group.size()}, what);
}

Status ring_allreduce(Group& group, int tag, char* data, char* scratch, int64_t count, size_t elem_bytes,
                      const CombineBytes& combine, const char* what) {
  Status s = ring_reduce_scatter(group, tag, data, scratch, count, elem_bytes, combine, what);
  if (!s.ok()) return s;
  return ring_allgather(group, tag, data, count, elem_bytes, what);
}

Status ring_reduce_scatter_blocks(Group& group, int tag, char* data, char* scratch, const std::vector<int64_t>& counts,
                                  size_t elem_bytes, const CombineBytes& combine, const char* what) {
  if (group.size() == 1) return Status::OK();
  const GivenBlocks b = given_blocks(data, counts, elem_bytes);
  for (int i = 0; i < group.size(); ++i) {
    if (b.bytes(i) > static_cast<size_t>(INT_MAX)) return Status::Internal(std::string(what) + ": block too large");
  }
  return reduce_scatter_round(group, tag, b, scratch, combine, what);
}

Status ring_allgather_blocks(Group& group, int tag, char* data, const std::vector<int64_t>& counts, size_t elem_bytes,
                             const char* what) {
  if (group.size() == 1) return Status::OK();
  const GivenBlocks b = given_blocks(data, counts, elem_bytes);
  for (int i = 0; i < group.size(); ++i) {
    if (b.bytes(i) > static_cast<size_t>(INT_MAX)) return Status::Internal(std::string(what) + ": block too large");
  }
  return allgather_round(group, tag, b, what);
}

}  // namespace kolo
