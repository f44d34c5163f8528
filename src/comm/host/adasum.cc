// Adasum allreduce of CPU tensors (ReduceOp::kAdasum): the ranks' tensors combine pairwise up a binary
// tree, (r0 + r1) + (r2 + r3) for 4 ranks, "+" being Adasum's step, computed per tensor of a fused group.
//
// Recursive vector halving with distance doubling, as in the paper and Horovod: at level L (1, 2, 4,
// ...) rank r and r ^ L hold the same slice of their groups' vectors A and B; each keeps half of it,
// taking the partner's values for that half, so that the 2L ranks of the new group each hold a
// distinct part of both A and B. The per-tensor dot products and norms over those parts are summed in
// the group (3 doubles per tensor), every rank combines its part with the same coefficients, and the
// halves are gathered back at the end, in reverse. A job of n ranks that is not a power of two p first
// folds rank p + i into rank i (one local pairwise step) and hands it the result at the end, so any n
// works (Horovod stops at powers of two).
//
// 16-bit tensors are combined in float (widened when packed, narrowed when unpacked); float32 and
// float64 in their own type. Prescale and postscale multiply on the way in and out; a joined rank
// contributes zeros, which Adasum leaves the other side unchanged by.
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "common/clock.h"
#include "comm/host/host_collectives.h"
#include "comm/host/tags.h"
#include "comm/joined.h"
#include "cpu/adasum_math.h"
#include "cpu/kernels.h"

namespace kolo {
namespace {

constexpr int64_t kChunkBytes = int64_t{1} << 30;  // message sizes fit an int in every transport

// Sends and receives between two ranks in chunks both sides cut alike (one's send is the other's receive).
Status exchange(const void* send, int64_t send_bytes, void* recv, int64_t recv_bytes, int partner, Group& group) {
  const char* s = static_cast<const char*>(send);
  char* r = static_cast<char*>(recv);
  int64_t done_s = 0, done_r = 0;
  do {
    const int64_t ns = std::min(kChunkBytes, send_bytes - done_s);
    const int64_t nr = std::min(kChunkBytes, recv_bytes - done_r);
    Status st = group.exchange(partner, partner, tags::kAdasum, s + done_s, static_cast<size_t>(ns), r + done_r,
                               static_cast<size_t>(nr), "Adasum exchange", WaitPace::kTransfer);
    if (!st.ok()) return st;
    done_s += ns;
    done_r += nr;
  } while (done_s < send_bytes || done_r < recv_bytes);
  return Status::OK();
}

// The per-tensor sums over the 2 * `level` ranks of this rank's group at a level (ranks r with the same
// r / (2 * level)), by recursive doubling: every partner combines the lower rank's sums first, so that the
// group's ranks all hold the same bits and combine their parts with the same coefficients.
Status sum_over_level_group(std::vector<AdasumDots>* dots, int level, Group& group) {
  const size_t bytes = dots->size() * sizeof(AdasumDots);
  std::vector<AdasumDots> theirs(dots->size());
  for (int m = 1; m < 2 * level; m <<= 1) {
    const int partner = group.rank() ^ m;
    Status s = group.exchange(partner, partner, tags::kAdasum, reinterpret_cast<const char*>(dots->data()), bytes,
                              reinterpret_cast<char*>(theirs.data()), bytes, "Adasum dot products");
    if (!s.ok()) return s;
    const bool lower = group.rank() < partner;
    for (size_t t = 0; t < dots->size(); ++t) {
      const AdasumDots& a = lower ? (*dots)[t] : theirs[t];
      const AdasumDots& b = lower ? theirs[t] : (*dots)[t];
      (*dots)[t] = AdasumDots{a.dot + b.dot, a.a_norm2 + b.a_norm2, a.b_norm2 + b.b_norm2};
    }
  }
  return Status::OK();
}

// Tensor t occupies [offsets[t], offsets[t + 1]) of the packed buffer.
struct Layout {
  std::vector<int64_t> offsets;
  int64_t total() const { return offsets.back(); }
  size_t tensors() const { return offsets.size() - 1; }
};

// out = adasum(a, b) over [lo, hi), each tensor's part with coefficients from `dots` (one per tensor).
template <typename T>
void combine_range(const T* a, const T* b, T* out, const Layout& layout, int64_t lo, int64_t hi,
                   const std::vector<AdasumDots>& dots) {
  for (size_t t = 0; t < layout.tensors(); ++t) {
    const int64_t from = std::max(lo, layout.offsets[t]), to = std::min(hi, layout.offsets[t + 1]);
    if (from < to) adasum_combine(a + from, b + from, out + from, to - from, adasum_coefficients(dots[t]));
  }
}

template <typename T>
std::vector<AdasumDots> dots_over(const T* a, const T* b, const Layout& layout, int64_t lo, int64_t hi) {
  std::vector<AdasumDots> dots(layout.tensors());
  for (size_t t = 0; t < layout.tensors(); ++t) {
    const int64_t from = std::max(lo, layout.offsets[t]), to = std::min(hi, layout.offsets[t + 1]);
    if (from < to) add_adasum_dots(a + from, b + from, to - from, &dots[t]);
  }
  return dots;
}

class HostAdasum : public Collective {
 public:
  explicit HostAdasum(const Context& context) : context_(context), name_(collective_name(context, "ADASUM")) {
    core_size_ = 1;
    while (core_size_ * 2 <= context.topology().size) core_size_ *= 2;
  }

  const char* name() const override { return name_.c_str(); }
  bool accepts(OpKind kind, DeviceType device) const override {
    return kind == OpKind::kAllreduce && device == DeviceType::kCPU;
  }
  bool accepts_reduction(ReduceOp op) const override { return op == ReduceOp::kAdasum; }

  Status run(CollectiveCall& call, PhaseLog& log, std::unique_ptr<Completion>*) override {
    Status s = prepare_host_joined_pieces(call);
    if (!s.ok()) return s;
    return call.dtype == DataType::kFloat64 ? run_as<double>(call, log) : run_as<float>(call, log);
  }

 private:
  template <typename T>
  Status run_as(CollectiveCall& call, PhaseLog& log) {
    const DataType work = sizeof(T) == sizeof(double) ? DataType::kFloat64 : DataType::kFloat32;
    const int64_t elem = static_cast<int64_t>(dtype_size(call.dtype));
    Layout layout;
    layout.offsets.push_back(0);
    for (const Piece& p : call.pieces) layout.offsets.push_back(layout.offsets.back() + p.bytes / elem);
    const int64_t n = layout.total();
    buffer_.resize(static_cast<size_t>(n) * sizeof(T));
    scratch_.resize(static_cast<size_t>(n) * sizeof(T));
    T* x = reinterpret_cast<T*>(buffer_.data());
    T* y = reinterpret_cast<T*>(scratch_.data());

    const double t0 = steady_seconds();
    const Scaling pre{call.prescale, 1};
    for (size_t i = 0; i < call.pieces.size(); ++i) {
      cast_into(call.dtype, work, call.pieces[i].in, x + layout.offsets[i], layout.offsets[i + 1] - layout.offsets[i],
                pre);
    }
    const double t1 = steady_seconds();
    Status s = reduce(x, y, layout);
    if (!s.ok()) return s;
    const double t2 = steady_seconds();
    const Scaling post{call.postscale, 1};
    for (size_t i = 0; i < call.pieces.size(); ++i) {
      cast_into(work, call.dtype, x + layout.offsets[i], call.pieces[i].out, layout.offsets[i + 1] - layout.offsets[i],
                post);
    }
    if (log.enabled()) {
      log.record_all(Phase::kPack, t0, t1);
      log.record_all(Phase::kCollective, t1, t2);
      log.record_all(Phase::kUnpack, t2, steady_seconds());
    }
    return Status::OK();
  }

  // x: this rank's packed tensors, replaced by the Adasum of every rank's; y: scratch of the same size.
  template <typename T>
  Status reduce(T* x, T* y, const Layout& layout) {
    Group& data = context_.data();
    const int rank = data.rank(), size = data.size();
    const int64_t n = layout.total();
    const int64_t bytes = n * static_cast<int64_t>(sizeof(T));
    const int extras = size - core_size_;
    // Fold in: rank core_size_ + i gives its tensors to rank i and gets the result at the end.
    if (rank >= core_size_) {
      Status s = exchange(x, bytes, nullptr, 0, rank - core_size_, data);
      if (s.ok()) s = exchange(nullptr, 0, x, bytes, rank - core_size_, data);
      return s;
    }
    if (rank < extras) {
      Status s = exchange(nullptr, 0, y, bytes, rank + core_size_, data);
      if (!s.ok()) return s;
      combine_range(x, y, x, layout, 0, n, dots_over(x, y, layout, 0, n));
    }

    // Halving: keep half of the current slice, combined with the partner's values for it.
    std::vector<std::pair<int64_t, int64_t>> slices;
    int64_t lo = 0, hi = n;
    for (int level = 1; level < core_size_; level *= 2) {
      const int partner = rank ^ level;
      const bool lower = (rank & level) == 0;
      const int64_t mid = lo + (hi - lo) / 2;
      const int64_t keep_lo = lower ? lo : mid, keep_hi = lower ? mid : hi;
      const int64_t give_lo = lower ? mid : lo, give_hi = lower ? hi : mid;
      Status s = exchange(x + give_lo, (give_hi - give_lo) * static_cast<int64_t>(sizeof(T)), y + keep_lo,
                          (keep_hi - keep_lo) * static_cast<int64_t>(sizeof(T)), partner, data);
      if (!s.ok()) return s;
      // A is the lower group's vector, B the upper's, on both sides, so the sums below agree.
      const T* a = lower ? x : y;
      const T* b = lower ? y : x;
      std::vector<AdasumDots> dots = dots_over(a, b, layout, keep_lo, keep_hi);
      static_assert(sizeof(AdasumDots) == 3 * sizeof(double), "AdasumDots travels as 3 doubles");
      s = sum_over_level_group(&dots, level, data);
      if (!s.ok()) return s;
      combine_range(a, b, x, layout, keep_lo, keep_hi, dots);
      slices.emplace_back(lo, hi);
      lo = keep_lo;
      hi = keep_hi;
    }
    // Gathering back, in reverse: the partner holds the rest of the slice both held before.
    for (int level = core_size_ / 2; level >= 1; level /= 2) {
      const auto [before_lo, before_hi] = slices.back();
      slices.pop_back();
      const bool lower = (rank & level) == 0;  // kept the first half of the slice
      const int64_t other_lo = lower ? hi : before_lo;
      const int64_t other_hi = lower ? before_hi : lo;
      Status s = exchange(x + lo, (hi - lo) * static_cast<int64_t>(sizeof(T)), x + other_lo,
                          (other_hi - other_lo) * static_cast<int64_t>(sizeof(T)), rank ^ level, data);
      if (!s.ok()) return s;
      lo = before_lo;
      hi = before_hi;
    }
    if (rank < extras) return exchange(x, bytes, nullptr, 0, rank + core_size_, data);
    return Status::OK();
  }

  const Context& context_;
  const std::string name_;
  int core_size_ = 1;  // the largest power of two of ranks; the others fold into them
  std::vector<char> buffer_, scratch_;
};

}  // namespace

std::unique_ptr<Collective> make_host_adasum(const Context& context) { return std::make_unique<HostAdasum>(context); }

}  // namespace kolo
