// Test data for kolo's reduction against Open MPI's (cpu_reduce_matches_mpi_test.cc): random values of
// every dtype with the awkward ones (NaN payloads, signaling NaNs, infinities, signed zeros, extremes)
// mixed in, how two results' first difference is told, the instruction sets to try, and the counts.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cpu/reduce.h"
#include "kolo/tensor.h"
#include "kolo/types.h"

namespace kolo {
namespace reduce_cases {

inline bool is_16bit_float(DataType d) { return d == DataType::kFloat16 || d == DataType::kBFloat16; }

// --- Data: random values with the awkward ones mixed in at random places, so that both operands of an
// element are awkward at once often enough.

template <typename F, typename U>
inline F from_bits(U u) {
  static_assert(sizeof(F) == sizeof(U), "same width");
  F f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

template <typename F, typename U>
inline void fill_floats(std::mt19937_64& rng, char* data, int64_t count) {
  constexpr int kMantissa = std::numeric_limits<F>::digits - 1;
  constexpr int kBits = static_cast<int>(sizeof(U)) * 8;
  const U sign = static_cast<U>(U(1) << (kBits - 1));
  const U exp_mask = static_cast<U>(~U(0) >> 1 & ~((U(1) << kMantissa) - 1));
  const U quiet = static_cast<U>(U(1) << (kMantissa - 1));
  const U payload_mask = static_cast<U>(quiet - 1);
  std::uniform_real_distribution<double> moderate(-100.0, 100.0);
  for (int64_t i = 0; i < count; ++i) {
    const U r = static_cast<U>(rng());
    const U s = (rng() & 1) ? sign : U(0);
    F v;
    switch (rng() % 16) {
      case 0: v = from_bits<F>(s); break;                                                // +0, -0
      case 1: v = from_bits<F>(static_cast<U>(s | exp_mask)); break;                     // +inf, -inf
      case 2:                                                                            // quiet NaN
      case 3: v = from_bits<F>(static_cast<U>(s | exp_mask | quiet | (r & payload_mask))); break;
      case 4: v = from_bits<F>(static_cast<U>(s | exp_mask | ((r & payload_mask) | 1))); break;  // signaling
      case 5: v = from_bits<F>(static_cast<U>(s | (r & ((U(1) << kMantissa) - 1)))); break;     // subnormal
      case 6: v = (rng() & 1) ? std::numeric_limits<F>::max() : std::numeric_limits<F>::lowest(); break;
      case 7:
      case 8:
      case 9: {  // any finite value, the huge ones overflowing sums and products to infinity
        U u = r;
        if ((u & exp_mask) == exp_mask) u = static_cast<U>(u & ~(U(1) << kMantissa));
        v = from_bits<F>(u);
        break;
      }
      default: v = static_cast<F>(moderate(rng));
    }
    std::memcpy(data + i * static_cast<int64_t>(sizeof(F)), &v, sizeof v);
  }
}

template <typename T>
inline void fill_integers(std::mt19937_64& rng, char* data, int64_t count) {
  using L = std::numeric_limits<T>;
  const T specials[] = {L::min(), L::max(), T(0), T(1), static_cast<T>(L::max() - 1), static_cast<T>(L::min() + 1),
                        static_cast<T>(L::max() / 2 + 1), static_cast<T>(-1)};
  for (int64_t i = 0; i < count; ++i) {
    T v;
    switch (rng() % 4) {
      case 0: v = specials[rng() % (sizeof specials / sizeof specials[0])]; break;
      case 1: v = static_cast<T>(static_cast<int>(rng() % 7) - 3); break;
      default: v = static_cast<T>(rng()); break;  // full range: sums and products overflow
    }
    std::memcpy(data + i * static_cast<int64_t>(sizeof(T)), &v, sizeof v);
  }
}

// `any_bool_byte`: bools as any byte (a framework may hand kolo such memory), else 0 and 1.
inline void fill(DataType dtype, std::mt19937_64& rng, char* data, int64_t count, bool any_bool_byte = false) {
  switch (dtype) {
    case DataType::kBool:
      for (int64_t i = 0; i < count; ++i) data[i] = static_cast<char>(any_bool_byte ? rng() : rng() & 1);
      break;
    case DataType::kUInt8: fill_integers<uint8_t>(rng, data, count); break;
    case DataType::kInt8: fill_integers<int8_t>(rng, data, count); break;
    case DataType::kInt16: fill_integers<int16_t>(rng, data, count); break;
    case DataType::kUInt16: fill_integers<uint16_t>(rng, data, count); break;
    case DataType::kInt32: fill_integers<int32_t>(rng, data, count); break;
    case DataType::kInt64: fill_integers<int64_t>(rng, data, count); break;
    case DataType::kFloat16:
    case DataType::kBFloat16:  // every bit pattern: NaNs with payloads, infinities, zeros, subnormals
      for (int64_t i = 0; i < count; ++i) {
        const uint16_t v = static_cast<uint16_t>(rng());
        std::memcpy(data + 2 * i, &v, 2);
      }
      break;
    case DataType::kFloat32: fill_floats<float, uint32_t>(rng, data, count); break;
    case DataType::kFloat64: fill_floats<double, uint64_t>(rng, data, count); break;
  }
}

inline std::string hex(const char* p, size_t n) {
  std::string s;
  char b[3];
  for (size_t i = n; i-- > 0;) {  // little-endian: the most significant byte first
    std::snprintf(b, sizeof b, "%02x", static_cast<unsigned char>(p[i]));
    s += b;
  }
  return s;
}

// The first element where `got` and `want` differ, told with the operands, or "" where none does.
inline std::string first_difference(DataType dtype, const char* from, const char* into, const char* want, const char* got,
                             int64_t count) {
  const size_t elem = dtype_size(dtype);
  for (int64_t i = 0; i < count; ++i) {
    const size_t at = static_cast<size_t>(i) * elem;
    if (std::memcmp(want + at, got + at, elem) != 0) {
      return "element " + std::to_string(i) + " of " + std::to_string(count) + ": from " + hex(from + at, elem) +
             " into " + hex(into + at, elem) + ": MPI " + hex(want + at, elem) + ", kolo " + hex(got + at, elem);
    }
  }
  return "";
}

inline std::string what(DataType dtype, ReduceOp op) {
  return std::string(dtype_name(dtype)) + " " + reduce_op_name(op);
}

// Every instruction set reduce_into's loops are built for that this CPU has (they must agree).
inline std::vector<ReduceIsa> isas() {
  std::vector<ReduceIsa> v;
  for (int i = 0; i <= static_cast<int>(best_reduce_isa()); ++i) v.push_back(static_cast<ReduceIsa>(i));
  return v;
}

const char* isa_name(ReduceIsa isa) {
  switch (isa) {
    case ReduceIsa::kBaseline: return "baseline";
    case ReduceIsa::kAvx2: return "AVX2";
    case ReduceIsa::kAvx512: return "AVX-512";
  }
  return "?";
}

// Counts past every step of Open MPI's loops (64, 32 and 16 bytes, then the scalar tail), and long ones.
inline std::vector<int64_t> counts() {
  std::vector<int64_t> c;
  for (int64_t n = 0; n <= 140; ++n) c.push_back(n);
  for (int64_t n : {255, 256, 257, 1000, 4096 + 7, 20011}) c.push_back(n);
  return c;
}

}  // namespace reduce_cases
}  // namespace kolo
