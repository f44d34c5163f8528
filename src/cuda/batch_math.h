// The arithmetic of kolo's batched copy (pack, unpack, scale, cast, identity fill: one launch for
// every tensor of a fused group), written once in KOLO_HD functions: the CUDA kernel
// (batched_copy.cu) only launches them, and the host double and the unit tests run the very same
// functions on the CPU.
//
// A launch covers up to kMaxPiecesPerLaunch pieces. Each piece is cut into chunks of
// kChunkElements elements; block b of the grid finds its piece by a binary search over the
// pieces' first blocks, then its chunk. Element arithmetic matches the CPU path (cpu/kernels.cc):
// floating point is scaled in double precision and rounded once to the destination type, integers
// are divided, truncating.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/half.h"
#include "common/integer_scaling.h"
#include "common/hd.h"
#include "comm/device/device.h"

namespace kolo {
namespace batch {

constexpr int64_t kChunkElements = 4096;
constexpr int kThreadsPerBlock = 256;
// Pieces one launch takes, its descriptors passed by value (CUDA 12.1+ takes 32 KB of kernel
// parameters; Horovod's kernel takes 160 pieces in 4 KB).
constexpr int kMaxPiecesPerLaunch = 1000;

// ---- Which block does what --------------------------------------------------------------------

KOLO_HD inline int64_t blocks_for(int64_t count) { return (count + kChunkElements - 1) / kChunkElements; }

// The piece that block `block` works on: the last i with first_block[i] <= block, where
// first_block[i] is the first block of piece i (ascending, first_block[0] == 0, n + 1 entries, the
// last one the launch's block count). Empty pieces own no block and are never chosen.
KOLO_HD inline int piece_of_block(const int64_t* first_block, int n, int64_t block) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (first_block[mid] <= block) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// The elements [*begin, *end) of chunk `chunk` of a piece of `count` elements.
KOLO_HD inline void chunk_of(int64_t count, int64_t chunk, int64_t* begin, int64_t* end) {
  *begin = chunk * kChunkElements;
  *end = *begin + kChunkElements < count ? *begin + kChunkElements : count;
}

// One launch of the kernel: pieces [first_piece, first_piece + n) of a batch.
struct Launch {
  size_t first_piece = 0;
  int n = 0;
  std::vector<int64_t> first_block;  // n + 1 entries; the last is the launch's block count
  int64_t blocks() const { return first_block.back(); }
};

// Cuts a batch into launches of at most kMaxPiecesPerLaunch pieces. Launches without blocks (only
// empty pieces) are left out.
inline std::vector<Launch> plan_launches(const std::vector<CopyPiece>& pieces) {
  std::vector<Launch> launches;
  for (size_t i = 0; i < pieces.size(); i += kMaxPiecesPerLaunch) {
    Launch l;
    l.first_piece = i;
    l.n = static_cast<int>(pieces.size() - i < static_cast<size_t>(kMaxPiecesPerLaunch) ? pieces.size() - i
                                                                                       : kMaxPiecesPerLaunch);
    l.first_block.reserve(static_cast<size_t>(l.n) + 1);
    int64_t blocks = 0;
    for (int k = 0; k < l.n; ++k) {
      l.first_block.push_back(blocks);
      blocks += blocks_for(pieces[i + static_cast<size_t>(k)].count);
    }
    l.first_block.push_back(blocks);
    if (blocks > 0) launches.push_back(std::move(l));
  }
  return launches;
}

// ---- Elements -----------------------------------------------------------------------------------

// 16-bit floats as stored (their bits), typed so that templates tell them apart.
struct alignas(2) Half {
  uint16_t bits;
};
struct alignas(2) BHalf {
  uint16_t bits;
};
// A bool as stored: one byte, 0 or 1.
struct alignas(1) Bool {
  uint8_t v;
};

template <typename T> struct IsFloating { static constexpr bool value = false; };
template <> struct IsFloating<float> { static constexpr bool value = true; };
template <> struct IsFloating<double> { static constexpr bool value = true; };
template <> struct IsFloating<Half> { static constexpr bool value = true; };
template <> struct IsFloating<BHalf> { static constexpr bool value = true; };

KOLO_HD inline double widen(float x) { return x; }
KOLO_HD inline double widen(double x) { return x; }
KOLO_HD inline double widen(Half x) { return fp16_to_float(x.bits); }
KOLO_HD inline double widen(BHalf x) { return bf16_to_float(x.bits); }

template <typename T> KOLO_HD T narrow(double d);
template <> KOLO_HD inline float narrow<float>(double d) { return static_cast<float>(d); }
template <> KOLO_HD inline double narrow<double>(double d) { return d; }
template <> KOLO_HD inline Half narrow<Half>(double d) { return Half{float_to_fp16(static_cast<float>(d))}; }
template <> KOLO_HD inline BHalf narrow<BHalf>(double d) { return BHalf{float_to_bf16(static_cast<float>(d))}; }

// A transform's scaling, resolved once per launch.
struct Scale {
  double factor = 1.0;
  int64_t divisor = 1;
};

// One element on its way from `From` to `To`. float32 to float32: scaled in float (the factor rounded
// to float), as Horovod and torch do. Other floating point: widened to double (exact), scaled,
// rounded once to To (16-bit types through float, as the CPU path does). Integers are scaled in
// double and truncated (scaled_integer), then divided, truncating. Bools pass as they are. All of it
// is what cpu/kernels.cc computes.
template <typename From, typename To>
KOLO_HD inline To convert(From x, const Scale& s) {
  if constexpr (std::is_same<From, float>::value && std::is_same<To, float>::value) {
    return s.factor == 1.0 ? x : x * static_cast<float>(s.factor);  // as the CPU path: float math
  } else if constexpr (IsFloating<From>::value) {
    const double d = widen(x);
    return narrow<To>(s.factor == 1.0 ? d : d * s.factor);
  } else if constexpr (std::is_same<From, Bool>::value) {
    return x;
  } else {
    if (s.factor == 1.0 && s.divisor == 1) return static_cast<To>(x);
    int64_t v = static_cast<int64_t>(x);
    if (s.factor != 1.0) v = scaled_integer(v, s.factor);
    return static_cast<To>(v / s.divisor);
  }
}

template <typename T> struct IntLimits;
template <> struct IntLimits<uint8_t> { static constexpr uint8_t lowest = 0, highest = 0xff; };
template <> struct IntLimits<int8_t> { static constexpr int8_t lowest = -0x7f - 1, highest = 0x7f; };
template <> struct IntLimits<int16_t> { static constexpr int16_t lowest = -0x7fff - 1, highest = 0x7fff; };
template <> struct IntLimits<uint16_t> { static constexpr uint16_t lowest = 0, highest = 0xffff; };
template <> struct IntLimits<int32_t> { static constexpr int32_t lowest = -0x7fffffff - 1, highest = 0x7fffffff; };
template <> struct IntLimits<int64_t> {
  static constexpr int64_t lowest = -0x7fffffffffffffffll - 1, highest = 0x7fffffffffffffffll;
};

// What a joined rank contributes: the identity of `op` (ReduceOp's values).
template <typename T>
KOLO_HD inline T identity_of(int op) {
  constexpr int kProduct = static_cast<int>(ReduceOp::kProduct);
  constexpr int kMin = static_cast<int>(ReduceOp::kMin);
  constexpr int kMax = static_cast<int>(ReduceOp::kMax);
  if constexpr (std::is_same<T, Bool>::value) {
    // And (Min, Product) starts from true, or (everything else) from false.
    return Bool{static_cast<uint8_t>(op == kMin || op == kProduct ? 1 : 0)};
  } else if constexpr (IsFloating<T>::value) {
    const double inf = static_cast<double>(bits_float(0x7f800000u));
    if (op == kProduct) return narrow<T>(1.0);
    if (op == kMin) return narrow<T>(inf);
    if (op == kMax) return narrow<T>(-inf);
    return narrow<T>(0.0);
  } else {
    // Integers: the largest value for Min, the smallest for Max.
    if (op == kProduct) return 1;
    if (op == kMin) return IntLimits<T>::highest;
    if (op == kMax) return IntLimits<T>::lowest;
    return 0;
  }
}

// Whether a piece is copied as its bits (same type, nothing to scale): bit for bit, NaN payloads
// included, as memcpy would; the kernel then moves 16 bytes at a time.
template <typename From, typename To>
KOLO_HD inline bool bitwise_copy(const From* src, const Scale& s) {
  return std::is_same<From, To>::value && src != nullptr && s.factor == 1.0 && s.divisor == 1;
}

// Elements [begin, end) of one piece, taken start, start + stride, ...: what one thread of the
// kernel does (stride: the block's threads), or the whole range on the CPU (start 0, stride 1).
// src null: the identity of `identity_op`.
template <typename From, typename To>
KOLO_HD inline void copy_range(const From* src, To* dst, int64_t begin, int64_t end, int64_t start, int64_t stride,
                               const Scale& s, int identity_op) {
  if (src == nullptr) {
    const To v = identity_of<To>(identity_op);
    for (int64_t i = begin + start; i < end; i += stride) dst[i] = v;
    return;
  }
  for (int64_t i = begin + start; i < end; i += stride) dst[i] = convert<From, To>(src[i], s);
}

// The element type behind each DataType.
template <DataType D> struct ElementOf;
template <> struct ElementOf<DataType::kUInt8> { using type = uint8_t; };
template <> struct ElementOf<DataType::kInt8> { using type = int8_t; };
template <> struct ElementOf<DataType::kInt16> { using type = int16_t; };
template <> struct ElementOf<DataType::kUInt16> { using type = uint16_t; };
template <> struct ElementOf<DataType::kBool> { using type = Bool; };
template <> struct ElementOf<DataType::kInt32> { using type = int32_t; };
template <> struct ElementOf<DataType::kInt64> { using type = int64_t; };
template <> struct ElementOf<DataType::kFloat16> { using type = Half; };
template <> struct ElementOf<DataType::kBFloat16> { using type = BHalf; };
template <> struct ElementOf<DataType::kFloat32> { using type = float; };
template <> struct ElementOf<DataType::kFloat64> { using type = double; };

// Calls Op<From, To>::run(args...) for the transform's pair of types: the same type, float32 to and
// from float16 or bfloat16 (compression), or int16 and uint16 to and from int32 (NCCL has neither).
// Other pairs fail.
template <template <typename, typename> class Op, typename... Args>
Status dispatch(DataType from, DataType to, Args&&... args) {
#define KOLO_BATCH_SAME(D)                                                                        \
  case D:                                                                                         \
    if (to == D) return Op<ElementOf<D>::type, ElementOf<D>::type>::run(std::forward<Args>(args)...); \
    break;
  switch (from) {
    KOLO_BATCH_SAME(DataType::kUInt8)
    KOLO_BATCH_SAME(DataType::kInt8)
    KOLO_BATCH_SAME(DataType::kBool)
    KOLO_BATCH_SAME(DataType::kInt64)
    KOLO_BATCH_SAME(DataType::kFloat64)
    case DataType::kInt16:
      if (to == DataType::kInt16) return Op<int16_t, int16_t>::run(std::forward<Args>(args)...);
      if (to == DataType::kInt32) return Op<int16_t, int32_t>::run(std::forward<Args>(args)...);
      break;
    case DataType::kUInt16:
      if (to == DataType::kUInt16) return Op<uint16_t, uint16_t>::run(std::forward<Args>(args)...);
      if (to == DataType::kInt32) return Op<uint16_t, int32_t>::run(std::forward<Args>(args)...);
      break;
    case DataType::kInt32:
      if (to == DataType::kInt32) return Op<int32_t, int32_t>::run(std::forward<Args>(args)...);
      if (to == DataType::kInt16) return Op<int32_t, int16_t>::run(std::forward<Args>(args)...);
      if (to == DataType::kUInt16) return Op<int32_t, uint16_t>::run(std::forward<Args>(args)...);
      break;
    case DataType::kFloat32:
      if (to == DataType::kFloat32) return Op<float, float>::run(std::forward<Args>(args)...);
      if (to == DataType::kFloat16) return Op<float, Half>::run(std::forward<Args>(args)...);
      if (to == DataType::kBFloat16) return Op<float, BHalf>::run(std::forward<Args>(args)...);
      break;
    case DataType::kFloat16:
      if (to == DataType::kFloat16) return Op<Half, Half>::run(std::forward<Args>(args)...);
      if (to == DataType::kFloat32) return Op<Half, float>::run(std::forward<Args>(args)...);
      break;
    case DataType::kBFloat16:
      if (to == DataType::kBFloat16) return Op<BHalf, BHalf>::run(std::forward<Args>(args)...);
      if (to == DataType::kFloat32) return Op<BHalf, float>::run(std::forward<Args>(args)...);
      break;
  }
#undef KOLO_BATCH_SAME
  return Status::InvalidArgument(std::string("a batched copy cannot turn ") + dtype_name(from) + " into " +
                                 dtype_name(to));
}

// The whole of one launch, block by block, on the CPU: what the kernel computes (the host double
// and the unit tests run it).
template <typename From, typename To>
struct RunOnHost {
  static Status run(const std::vector<CopyPiece>& pieces, const Launch& l, const Scale& s, int identity_op) {
    for (int64_t b = 0; b < l.blocks(); ++b) {
      const int k = piece_of_block(l.first_block.data(), l.n, b);
      const CopyPiece& p = pieces[l.first_piece + static_cast<size_t>(k)];
      int64_t begin = 0, end = 0;
      chunk_of(p.count, b - l.first_block[static_cast<size_t>(k)], &begin, &end);
      const From* src = static_cast<const From*>(p.src);
      if (bitwise_copy<From, To>(src, s)) {
        std::memcpy(static_cast<To*>(p.dst) + begin, src + begin, static_cast<size_t>(end - begin) * sizeof(From));
        continue;
      }
      copy_range<From, To>(src, static_cast<To*>(p.dst), begin, end, 0, 1, s, identity_op);
    }
    return Status::OK();
  }
};

inline Scale scale_of(const CopyTransform& t) { return Scale{t.scale, t.divisor}; }

// A batched copy computed on the CPU, launch by launch and block by block.
inline Status batched_copy_on_host(const std::vector<CopyPiece>& pieces, const CopyTransform& t) {
  for (const Launch& l : plan_launches(pieces)) {
    Status s = dispatch<RunOnHost>(t.from, t.to, pieces, l, scale_of(t), static_cast<int>(t.identity));
    if (!s.ok()) return s;
  }
  return Status::OK();
}

}  // namespace batch
}  // namespace kolo
