// Built with -O3 (src/CMakeLists.txt): the loops below are what the vectorizer takes.
#include "cpu/sum_inputs.h"

namespace kolo {
namespace {

template <typename T>
void sum_two(const T* a, const T* b, T* out, int64_t count) {
  for (int64_t i = 0; i < count; ++i) out[i] = a[i] + b[i];
}

template <typename T>
void sum_n(const char* const* in, int n, char* out_bytes, int64_t count) {
  T* out = reinterpret_cast<T*>(out_bytes);
  // In blocks that stay in L1, so that the partial sums are not written to memory once per input.
  constexpr int64_t kBlock = 2048;
  for (int64_t at = 0; at < count; at += kBlock) {
    const int64_t m = count - at < kBlock ? count - at : kBlock;
    T acc[kBlock];
    sum_two(reinterpret_cast<const T*>(in[0]) + at, reinterpret_cast<const T*>(in[1]) + at, acc, m);
    for (int j = 2; j < n; ++j) {
      const T* x = reinterpret_cast<const T*>(in[j]) + at;
      for (int64_t i = 0; i < m; ++i) acc[i] += x[i];
    }
    for (int64_t i = 0; i < m; ++i) out[at + i] = acc[i];
  }
}

}  // namespace

bool sum_inputs(DataType dtype, const char* const* in, int n, char* out, int64_t count) {
  if (n == 1) return false;
  switch (dtype) {
    case DataType::kFloat32: sum_n<float>(in, n, out, count); return true;
    case DataType::kFloat64: sum_n<double>(in, n, out, count); return true;
    case DataType::kInt32: sum_n<int32_t>(in, n, out, count); return true;
    case DataType::kInt64: sum_n<int64_t>(in, n, out, count); return true;
    default: return false;
  }
}

}  // namespace kolo
