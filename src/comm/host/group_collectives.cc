// kolo's own implementations of a Group's collectives (comm/group.h), over its point-to-point messages:
// what a world whose transport has no collectives of its own (Gloo's pairs) runs, every wait giving up as
// the group's do. MPI's group overrides each with MPI's own.
#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "common/blocks.h"
#include "comm/group.h"
#include "comm/host/combine_bytes.h"
#include "comm/host/recursive_doubling.h"
#include "comm/host/ring_allreduce.h"
#include "comm/host/tags.h"

namespace kolo {
namespace {

// At most this much goes by recursive doubling (one latency per doubling), more by the ring (each rank
// sends 2(n-1)/n of it), as the flat allreduce chooses (comm/allreduce_choice.h).
constexpr int64_t kRecursiveDoublingBytes = 64 << 10;
// Messages at most this large: counts fit an int in every transport.
constexpr int64_t kPieceBytes = int64_t{1} << 30;

Status sends_in_pieces(Group& g, int peer, int tag, const char* data, int64_t bytes, const char* what) {
  for (int64_t at = 0; at < bytes || at == 0; at += kPieceBytes) {
    Status s = g.send(peer, tag, data + at, static_cast<size_t>(std::min(kPieceBytes, bytes - at)), what,
                      WaitPace::kTransfer);
    if (!s.ok() || bytes == 0) return s;
  }
  return Status::OK();
}

Status receives_in_pieces(Group& g, int peer, int tag, char* data, int64_t bytes, const char* what) {
  for (int64_t at = 0; at < bytes || at == 0; at += kPieceBytes) {
    Status s = g.receive(peer, tag, data + at, static_cast<size_t>(std::min(kPieceBytes, bytes - at)), what,
                         WaitPace::kTransfer);
    if (!s.ok() || bytes == 0) return s;
  }
  return Status::OK();
}

}  // namespace

Status Group::send(int peer, int tag, const char* data, size_t bytes, const char* what, WaitPace pace) {
  std::unique_ptr<Transfer> t;
  Status s = post_send(peer, tag, data, bytes, what, &t);
  return s.ok() ? t->wait(pace) : s;
}

Status Group::receive(int peer, int tag, char* data, size_t bytes, const char* what, WaitPace pace) {
  std::unique_ptr<Transfer> t;
  Status s = post_receive(peer, tag, data, bytes, what, &t);
  return s.ok() ? t->wait(pace) : s;
}

Status Group::exchange(int left, int right, int tag, const char* out, size_t out_bytes, char* in, size_t in_bytes,
                       const char* what, WaitPace pace) {
  std::unique_ptr<Transfer> received, sent;
  Status s = post_receive(left, tag, in, in_bytes, what, &received);
  if (s.ok()) s = post_send(right, tag, out, out_bytes, what, &sent);
  if (s.ok()) s = received->wait(pace);
  if (s.ok()) return sent->wait(pace);
  if (received) received->cancel();
  if (sent) sent->cancel();
  return s;
}

Status Group::allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op, const char* what) {
  const size_t elem = dtype_size(dtype);
  const int64_t bytes = count * static_cast<int64_t>(elem);
  if (send != nullptr && send != recv && bytes > 0) std::memcpy(recv, send, static_cast<size_t>(bytes));
  if (size() == 1 || bytes == 0) return Status::OK();
  const CombineBytes combine = combine_for(dtype, op);
  if (bytes <= kRecursiveDoublingBytes) {
    std::vector<char> scratch(static_cast<size_t>(bytes));
    return recursive_doubling_allreduce(*this, tags::kGroupAllreduce, static_cast<char*>(recv), scratch.data(),
                                        static_cast<size_t>(bytes), combine, what);
  }
  std::vector<char> scratch(ring_scratch_bytes(count, elem, size()));
  return ring_allreduce(*this, tags::kGroupAllreduce, static_cast<char*>(recv), scratch.data(), count, elem, combine,
                        what);
}

Status Group::allgatherv(const void* in, void* out, const std::vector<int64_t>& rows, int64_t row_bytes,
                         const char* what) {
  int64_t before = 0;
  for (int r = 0; r < rank(); ++r) before += rows[static_cast<size_t>(r)];
  char* mine = static_cast<char*>(out) + before * row_bytes;
  const int64_t my_bytes = rows[static_cast<size_t>(rank())] * row_bytes;
  if (in != mine && my_bytes > 0) std::memcpy(mine, in, static_cast<size_t>(my_bytes));
  return ring_allgather_blocks(*this, tags::kGroupAllgather, static_cast<char*>(out), rows,
                               static_cast<size_t>(row_bytes), what);
}

Status Group::broadcast(void* data, int64_t bytes, int root, const char* what, WaitPace pace) {
  (void)pace;  // these waits sleep until the data comes, or pace themselves as the transport does
  // A binomial tree rooted at `root`: in round k, every rank that has the data sends it 2^k ranks on.
  const int n = size();
  const int me = (rank() - root + n) % n;  // place in the tree
  char* p = static_cast<char*>(data);
  int mask = 1;
  while (mask < n) {
    if (me & mask) {
      Status s = receives_in_pieces(*this, (me - mask + root) % n, tags::kGroupBroadcast, p, bytes, what);
      if (!s.ok()) return s;
      break;
    }
    mask <<= 1;
  }
  for (mask >>= 1; mask > 0; mask >>= 1) {
    if (me + mask < n) {
      Status s = sends_in_pieces(*this, (me + mask + root) % n, tags::kGroupBroadcast, p, bytes, what);
      if (!s.ok()) return s;
    }
  }
  return Status::OK();
}

Status Group::alltoallv(const void* in, const std::vector<int64_t>& send_rows, void* out,
                        const std::vector<int64_t>& recv_rows, int64_t row_bytes, const char* what) {
  const int n = size(), me = rank();
  std::vector<int64_t> send_at(static_cast<size_t>(n) + 1, 0), recv_at(static_cast<size_t>(n) + 1, 0);
  for (int r = 0; r < n; ++r) {
    send_at[static_cast<size_t>(r) + 1] = send_at[static_cast<size_t>(r)] + send_rows[static_cast<size_t>(r)] * row_bytes;
    recv_at[static_cast<size_t>(r) + 1] = recv_at[static_cast<size_t>(r)] + recv_rows[static_cast<size_t>(r)] * row_bytes;
  }
  const char* from = static_cast<const char*>(in);
  char* to = static_cast<char*>(out);
  const int64_t own = send_at[static_cast<size_t>(me) + 1] - send_at[static_cast<size_t>(me)];
  if (own > 0) std::memcpy(to + recv_at[static_cast<size_t>(me)], from + send_at[static_cast<size_t>(me)], static_cast<size_t>(own));
  // Pairwise: at step s this rank sends to rank + s and receives from rank - s.
  for (int s = 1; s < n; ++s) {
    const int right = (me + s) % n, left = (me - s + n) % n;
    const int64_t out_bytes = send_at[static_cast<size_t>(right) + 1] - send_at[static_cast<size_t>(right)];
    const int64_t in_bytes = recv_at[static_cast<size_t>(left) + 1] - recv_at[static_cast<size_t>(left)];
    if (out_bytes > INT_MAX || in_bytes > INT_MAX) return Status::Unsupported(std::string(what) + ": a block of 2 GiB or more");
    Status st = exchange(left, right, tags::kGroupAlltoall, from + send_at[static_cast<size_t>(right)],
                         static_cast<size_t>(out_bytes), to + recv_at[static_cast<size_t>(left)],
                         static_cast<size_t>(in_bytes), what, WaitPace::kTransfer);
    if (!st.ok()) return st;
  }
  return Status::OK();
}

Status Group::reduce_scatter(const void* in, void* out, const std::vector<int64_t>& counts, DataType dtype, ReduceOp op,
                             const char* what) {
  const size_t elem = dtype_size(dtype);
  int64_t total = 0, before = 0, largest = 0;
  for (int r = 0; r < size(); ++r) {
    if (r == rank()) before = total;
    total += counts[static_cast<size_t>(r)];
    largest = std::max(largest, counts[static_cast<size_t>(r)]);
  }
  // The ring reduces in place: a copy of the input, whose own block ends reduced.
  std::vector<char> data(static_cast<size_t>(total) * elem), scratch(static_cast<size_t>(largest) * elem);
  if (total > 0) std::memcpy(data.data(), in, data.size());
  Status s = ring_reduce_scatter_blocks(*this, tags::kGroupReduceScatter, data.data(), scratch.data(), counts, elem,
                                        combine_for(dtype, op), what);
  if (!s.ok()) return s;
  const size_t mine = static_cast<size_t>(counts[static_cast<size_t>(rank())]) * elem;
  if (mine > 0) std::memcpy(out, data.data() + static_cast<size_t>(before) * elem, mine);
  return Status::OK();
}

Status Group::gather(const std::string& mine, std::vector<std::string>* all, const char* what) {
  all->clear();
  if (rank() != 0) {
    const uint64_t n = mine.size();
    Status s = send(0, tags::kGroupGather, reinterpret_cast<const char*>(&n), sizeof n, what);
    if (!s.ok() || n == 0) return s;
    return sends_in_pieces(*this, 0, tags::kGroupGather, mine.data(), static_cast<int64_t>(n), what);
  }
  all->resize(static_cast<size_t>(size()));
  (*all)[0] = mine;
  for (int r = 1; r < size(); ++r) {
    uint64_t n = 0;
    Status s = receive(r, tags::kGroupGather, reinterpret_cast<char*>(&n), sizeof n, what);
    if (!s.ok()) return s;
    std::string& bytes = (*all)[static_cast<size_t>(r)];
    bytes.resize(n);
    if (n > 0) s = receives_in_pieces(*this, r, tags::kGroupGather, &bytes[0], static_cast<int64_t>(n), what);
    if (!s.ok()) return s;
  }
  return Status::OK();
}

Status Group::allgather(const std::string& mine, std::vector<std::string>* all, const char* what) {
  const int n = size();
  std::vector<int64_t> sizes(static_cast<size_t>(n), 0);
  int64_t my_size = static_cast<int64_t>(mine.size());
  std::vector<int64_t> ones(static_cast<size_t>(n), 1);
  Status s = allgatherv(&my_size, sizes.data(), ones, sizeof(int64_t), what);
  if (!s.ok()) return s;
  int64_t total = 0;
  for (int64_t b : sizes) total += b;
  std::string flat(static_cast<size_t>(total), '\0');
  int64_t before = 0;
  for (int r = 0; r < rank(); ++r) before += sizes[static_cast<size_t>(r)];
  if (!mine.empty()) std::memcpy(&flat[static_cast<size_t>(before)], mine.data(), mine.size());
  s = allgatherv(flat.data() + before, &flat[0], sizes, 1, what);
  if (!s.ok()) return s;
  all->assign(static_cast<size_t>(n), {});
  int64_t at = 0;
  for (int r = 0; r < n; ++r) {
    (*all)[static_cast<size_t>(r)] = flat.substr(static_cast<size_t>(at), static_cast<size_t>(sizes[static_cast<size_t>(r)]));
    at += sizes[static_cast<size_t>(r)];
  }
  return Status::OK();
}

Status Group::all_true(bool ok, bool* all, const char* what) {
  int32_t v = ok ? 1 : 0;
  Status s = allreduce(nullptr, &v, 1, DataType::kInt32, ReduceOp::kMin, what);
  *all = s.ok() && v == 1;
  return s;
}

}  // namespace kolo
