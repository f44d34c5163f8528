// Open MPI 4.1's reductions, rewritten (cpu/reduce.h says why, and how its results depend on position).
// The loops run over groups of 64 bytes, each a loop of a fixed count on __restrict pointers, which GCC
// vectorizes even at -O2 (its "very cheap" cost model declines a plain loop of unknown count, and any
// loop over int64 or double); the tail is scalar, as Open MPI's is. They are built for the baseline, AVX2
// and AVX-512, and the best the CPU has runs (Open MPI's own run on AVX-512 where there is one). The
// element functions below say in their names whose NaN wins, and hold however the compiler orders an
// addition's operands.
#include "cpu/reduce.h"

#include <cstring>
#include <limits>
#include <type_traits>

#include "cpu/kernels.h"
#include "cpu/sum_inputs.h"

namespace kolo {
namespace {

// Open MPI's avx component reduces the whole 16-byte blocks with SIMD intrinsics where the CPU has SSE
// (it always does on x86-64): on other CPUs every element reduces as the scalar tail.
#if defined(__x86_64__) || defined(__i386__)
constexpr bool kSimdBlocks = true;
#else
constexpr bool kSimdBlocks = false;
#endif

// The loops are built for the baseline and, on x86-64 with GCC or clang, for AVX2 and AVX-512 too: the
// best the CPU has runs. The helpers are inlined into each entry point so that each gets its own loops.
#if defined(__x86_64__) && defined(__GNUC__)
#define KOLO_REDUCE_X86_VARIANTS 1
#define KOLO_REDUCE_INLINE __attribute__((always_inline)) inline
#else
#define KOLO_REDUCE_X86_VARIANTS 0
#define KOLO_REDUCE_INLINE inline
#endif

template <typename T>
constexpr int64_t kLanes = 16 / static_cast<int64_t>(sizeof(T));

// Unsigned arithmetic at least as wide as an int, so that integers wrap instead of overflowing (int8 and
// int16 operands would otherwise promote to int, where 65535 * 65535 overflows).
template <typename T>
using Wrap = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

// --- Integers: both regions alike, except the 8- and 16-bit sums.

struct WrapSum {
  template <typename T>
  T operator()(T from, T into) const {
    return static_cast<T>(static_cast<Wrap<T>>(into) + static_cast<Wrap<T>>(from));
  }
};

struct WrapProduct {
  template <typename T>
  T operator()(T from, T into) const {
    return static_cast<T>(static_cast<Wrap<T>>(into) * static_cast<Wrap<T>>(from));
  }
};

// _mm_adds_ep[iu]{8,16}: clamped to the type's range. Computed in the type's width (no widening), so the
// vectorizer keeps 16 lanes of int8.
struct SaturatingSum {
  template <typename T>
  T operator()(T from, T into) const {
    using U = std::make_unsigned_t<T>;
    const T s = static_cast<T>(static_cast<U>(static_cast<U>(into) + static_cast<U>(from)));
    if constexpr (std::is_unsigned_v<T>) {
      return s < into ? std::numeric_limits<T>::max() : s;
    } else {
      const bool overflow = ((into ^ s) & (from ^ s)) < 0;  // both operands' sign differs from the sum's
      const T limit = into < 0 ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max();
      return overflow ? limit : s;
    }
  }
};

// --- Floating point. The whole blocks compute op(from, into) with from as the instruction's first
// operand (Open MPI's _mm*_op_p[sd](in, inout)), the tail op(into, from) (its C: out = out op in).

// maxps(a, b) = a > b ? a : b, and C's (a > b ? a : b) is the same: b where either is a NaN or both are
// zeros. No arithmetic: a signaling NaN is returned as it is.
struct MaxFromFirst {
  template <typename T>
  T operator()(T from, T into) const { return from > into ? from : into; }
};
struct MaxIntoFirst {
  template <typename T>
  T operator()(T from, T into) const { return into > from ? into : from; }
};
struct MinFromFirst {
  template <typename T>
  T operator()(T from, T into) const { return from < into ? from : into; }
};
struct MinIntoFirst {
  template <typename T>
  T operator()(T from, T into) const { return into < from ? into : from; }
};

// x86 gives the first operand's NaN (quieted) when both are NaNs, but a compiler may swap an addition's
// operands. So the NaN that must win is added to itself (p + p of a NaN p: p, quieted), whatever the
// order; with one NaN, or none, the sum is what either order gives.
struct SumFromFirst {
  template <typename T>
  T operator()(T from, T into) const { return from + (from != from ? from : into); }
};
struct SumIntoFirst {
  template <typename T>
  T operator()(T from, T into) const { return into + (into != into ? into : from); }
};
struct ProductFromFirst {
  template <typename T>
  T operator()(T from, T into) const { return from * (from != from ? from : into); }
};
struct ProductIntoFirst {
  template <typename T>
  T operator()(T from, T into) const { return into * (into != into ? into : from); }
};

// into[i] = Op(from[i], into[i]) for i in [begin, end), in groups of 64 bytes: a loop of a fixed count
// inside, which -O2 vectorizes for every element width (its cost model declines a plain loop over int64
// or double elements), then the rest one by one. Inlined always, so that each instruction set's entry
// point below compiles its own copy.
template <typename T, typename Op>
KOLO_REDUCE_INLINE void reduce_range(const T* __restrict from, T* __restrict into, int64_t begin, int64_t end) {
  constexpr int64_t kGroup = 4 * kLanes<T>;
  const Op op;
  int64_t i = begin;
  for (; i + kGroup <= end; i += kGroup) {
    for (int64_t k = 0; k < kGroup; ++k) into[i + k] = op(from[i + k], into[i + k]);
  }
  for (; i < end; ++i) into[i] = op(from[i], into[i]);
}

// into[i] = Block(from[i], into[i]) over the whole 16-byte blocks, Tail(...) over the rest (fewer than
// 16 bytes; everything where Open MPI has no SIMD loops).
template <typename T, typename Block, typename Tail = Block>
KOLO_REDUCE_INLINE void run(const void* from_bytes, void* into_bytes, int64_t count) {
  const T* from = static_cast<const T*>(from_bytes);
  T* into = static_cast<T*>(into_bytes);
  if constexpr (kSimdBlocks) {
    const int64_t blocks_end = count & ~(kLanes<T> - 1);
    reduce_range<T, Block>(from, into, 0, blocks_end);
    const Tail tail;
    for (int64_t i = blocks_end; i < count; ++i) into[i] = tail(from[i], into[i]);
  } else {
    reduce_range<T, Tail>(from, into, 0, count);
  }
}

// `op` is reduction_for's: bools arrive as Max or Min on uint8.
template <typename T>
KOLO_REDUCE_INLINE void reduce_integers(ReduceOp op, const void* from, void* into, int64_t count) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      if constexpr (sizeof(T) <= 2) {
        run<T, SaturatingSum, WrapSum>(from, into, count);
      } else {
        run<T, WrapSum>(from, into, count);
      }
      break;
    // Integers have no NaNs and no signed zeros: either operand order gives the same value.
    case ReduceOp::kMin: run<T, MinIntoFirst>(from, into, count); break;
    case ReduceOp::kMax: run<T, MaxIntoFirst>(from, into, count); break;
    case ReduceOp::kProduct: run<T, WrapProduct>(from, into, count); break;
    case ReduceOp::kAdasum: break;  // not element-wise
  }
}

template <typename T>
KOLO_REDUCE_INLINE void reduce_floats(ReduceOp op, const void* from, void* into, int64_t count) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage: run<T, SumFromFirst, SumIntoFirst>(from, into, count); break;
    case ReduceOp::kMin: run<T, MinFromFirst, MinIntoFirst>(from, into, count); break;
    case ReduceOp::kMax: run<T, MaxFromFirst, MaxIntoFirst>(from, into, count); break;
    case ReduceOp::kProduct: run<T, ProductFromFirst, ProductIntoFirst>(from, into, count); break;
    case ReduceOp::kAdasum: break;  // not element-wise
  }
}

// Every dtype but the 16-bit floats (cpu/kernels.cc's, shared with the MPI world's user ops).
KOLO_REDUCE_INLINE void reduce_typed(DataType dtype, ReduceOp r, const void* from, void* into, int64_t count) {
  switch (dtype) {
    case DataType::kBool:
    case DataType::kUInt8: reduce_integers<uint8_t>(r, from, into, count); break;
    case DataType::kInt8: reduce_integers<int8_t>(r, from, into, count); break;
    case DataType::kInt16: reduce_integers<int16_t>(r, from, into, count); break;
    case DataType::kUInt16: reduce_integers<uint16_t>(r, from, into, count); break;
    case DataType::kInt32: reduce_integers<int32_t>(r, from, into, count); break;
    case DataType::kInt64: reduce_integers<int64_t>(r, from, into, count); break;
    case DataType::kFloat32: reduce_floats<float>(r, from, into, count); break;
    case DataType::kFloat64: reduce_floats<double>(r, from, into, count); break;
    case DataType::kFloat16:
    case DataType::kBFloat16: break;
  }
}

// The loops built once per instruction set (the bits do not depend on it: every element's answer is
// fixed above, and no operation could fuse with another). Open MPI reduces with AVX-512 or AVX2 where
// the CPU has them; at the x86-64 baseline (SSE2) kolo's loops would take 2 to 4 times as long on data
// in cache.
using TypedFn = void (*)(DataType, ReduceOp, const void*, void*, int64_t);

void reduce_baseline(DataType dtype, ReduceOp r, const void* from, void* into, int64_t count) {
  reduce_typed(dtype, r, from, into, count);
}

#if KOLO_REDUCE_X86_VARIANTS
__attribute__((target("avx2"))) void reduce_avx2(DataType dtype, ReduceOp r, const void* from, void* into,
                                                 int64_t count) {
  reduce_typed(dtype, r, from, into, count);
}

// GCC builds 256-bit loops for AVX-512 unless told to prefer 512 bits (clang has no such target option).
#if defined(__clang__)
#define KOLO_REDUCE_AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512dq"
#else
#define KOLO_REDUCE_AVX512_TARGET "avx512f,avx512bw,avx512vl,avx512dq,prefer-vector-width=512"
#endif
__attribute__((target(KOLO_REDUCE_AVX512_TARGET))) void reduce_avx512(DataType dtype, ReduceOp r, const void* from,
                                                                     void* into, int64_t count) {
  reduce_typed(dtype, r, from, into, count);
}
#endif

ReduceIsa detect_isa() {
#if KOLO_REDUCE_X86_VARIANTS
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512dq")) {
    return ReduceIsa::kAvx512;
  }
  if (__builtin_cpu_supports("avx2")) return ReduceIsa::kAvx2;
#endif
  return ReduceIsa::kBaseline;
}

TypedFn typed_fn(ReduceIsa isa) {
#if KOLO_REDUCE_X86_VARIANTS
  if (isa == ReduceIsa::kAvx512) return reduce_avx512;
  if (isa == ReduceIsa::kAvx2) return reduce_avx2;
#endif
  return reduce_baseline;
}

void reduce_with(TypedFn fn, DataType dtype, ReduceOp op, const void* from, void* into, int64_t count) {
  if (count <= 0) return;
  const ReduceOp r = reduction_for(dtype, op);
  if (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) {
    reduce_16bit(dtype, r, static_cast<const uint16_t*>(from), static_cast<uint16_t*>(into), count);
    return;
  }
  fn(dtype, r, from, into, count);
}

// Folding pieces of this many bytes (a multiple of 16, so every element stays in the same region of
// reduce_into's blocks and tail) keeps `out`'s piece in L1 while each input is folded into it.
constexpr int64_t kFoldBytes = 16 * 1024;

}  // namespace

ReduceIsa best_reduce_isa() {
  static const ReduceIsa best = detect_isa();
  return best;
}

void reduce_into(DataType dtype, ReduceOp op, const void* from, void* into, int64_t count) {
  static const TypedFn fn = typed_fn(best_reduce_isa());
  reduce_with(fn, dtype, op, from, into, count);
}

void reduce_into(ReduceIsa isa, DataType dtype, ReduceOp op, const void* from, void* into, int64_t count) {
  const ReduceIsa best = best_reduce_isa();
  reduce_with(typed_fn(static_cast<int>(isa) < static_cast<int>(best) ? isa : best), dtype, op, from, into, count);
}

void reduce_inputs(DataType dtype, ReduceOp op, const char* const* inputs, int n, char* out, int64_t count) {
  if (n <= 0 || count <= 0) return;
  const ReduceOp r = reduction_for(dtype, op);
  if ((r == ReduceOp::kSum || r == ReduceOp::kAverage) && sum_inputs(dtype, inputs, n, out, count)) return;
  // Folded into the input that is `out` (else a copy of the first), the others in order: a fixed order,
  // so that the rank that reduces a piece and the ranks that reduce all of it get the same bits.
  int first = 0;
  while (first < n && inputs[first] != out) ++first;
  const bool copy = first == n;
  if (copy) first = 0;
  const int64_t elem = static_cast<int64_t>(dtype_size(dtype));
  const int64_t piece = kFoldBytes / elem;
  for (int64_t at = 0; at < count; at += piece) {
    const int64_t m = count - at < piece ? count - at : piece;
    const int64_t offset = at * elem;
    if (copy) std::memcpy(out + offset, inputs[0] + offset, static_cast<size_t>(m * elem));
    for (int j = 0; j < n; ++j) {
      if (j != first) reduce_into(dtype, op, inputs[j] + offset, out + offset, m);
    }
  }
}

}  // namespace kolo
