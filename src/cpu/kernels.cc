#include "cpu/kernels.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "common/half.h"
#include "common/integer_scaling.h"

namespace kolo {
namespace {

template <typename T>
void multiply(const T* src, T* dst, int64_t n, double f) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<double>(src[i]) * f);
}

// float32 scales in float, the factor rounded to float first: what Horovod's kernels and torch's own
// `tensor * factor` compute, so results match theirs bit for bit.
void multiply_float(const float* src, float* dst, int64_t n, double f) {
  const float ff = static_cast<float>(f);
  for (int64_t i = 0; i < n; ++i) dst[i] = src[i] * ff;
}

template <typename T>
void divide(const T* src, T* dst, int64_t n, double f, int64_t d) {
  if (f == 1.0) {
    for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(static_cast<int64_t>(src[i]) / d);
    return;
  }
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(scaled_integer(static_cast<int64_t>(src[i]), f) / d);
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void multiply_16(const uint16_t* src, uint16_t* dst, int64_t n, double f) {
  for (int64_t i = 0; i < n; ++i) dst[i] = Narrow(static_cast<float>(static_cast<double>(Widen(src[i])) * f));
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float), typename Op>
void reduce_16(const uint16_t* in, uint16_t* inout, int64_t n, Op op) {
  for (int64_t i = 0; i < n; ++i) inout[i] = Narrow(op(Widen(in[i]), Widen(inout[i])));
}

template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float)>
void reduce_16_op(ReduceOp op, const uint16_t* in, uint16_t* inout, int64_t n) {
  switch (op) {
    case ReduceOp::kSum:
    case ReduceOp::kAverage:
      reduce_16<Widen, Narrow>(in, inout, n, [](float a, float b) { return a + b; });
      break;
    case ReduceOp::kMin:
      reduce_16<Widen, Narrow>(in, inout, n, [](float a, float b) { return std::min(a, b); });
      break;
    case ReduceOp::kMax:
      reduce_16<Widen, Narrow>(in, inout, n, [](float a, float b) { return std::max(a, b); });
      break;
    case ReduceOp::kProduct:
      reduce_16<Widen, Narrow>(in, inout, n, [](float a, float b) { return a * b; });
      break;
    case ReduceOp::kAdasum:  // not an elementwise op: its own collective
      break;
  }
}

}  // namespace

Scaling post_scaling(DataType dtype, ReduceOp op, double postscale, int size) {
  Scaling s;
  if (dtype == DataType::kBool) return s;  // a logical reduction: nothing to scale
  if (dtype_is_floating(dtype)) {
    s.factor = postscale * (op == ReduceOp::kAverage ? 1.0 / size : 1.0);
    return s;
  }
  s.factor = postscale;
  if (op == ReduceOp::kAverage) s.divisor = size;
  return s;
}

void scale_into(DataType dtype, const void* src, void* dst, int64_t count, const Scaling& s) {
  if (s.identity()) {
    if (src != dst) std::memcpy(dst, src, static_cast<size_t>(count) * dtype_size(dtype));
    return;
  }
  const double f = s.factor;
  const int64_t d = s.divisor;
  switch (dtype) {
    case DataType::kFloat32:
      multiply_float(static_cast<const float*>(src), static_cast<float*>(dst), count, f);
      break;
    case DataType::kFloat64:
      multiply(static_cast<const double*>(src), static_cast<double*>(dst), count, f);
      break;
    case DataType::kFloat16:
      multiply_16<fp16_to_float, float_to_fp16>(static_cast<const uint16_t*>(src),
                                                static_cast<uint16_t*>(dst), count, f);
      break;
    case DataType::kBFloat16:
      multiply_16<bf16_to_float, float_to_bf16>(static_cast<const uint16_t*>(src),
                                                static_cast<uint16_t*>(dst), count, f);
      break;
    case DataType::kUInt8:
    case DataType::kBool:  // never scaled; here for completeness
      divide(static_cast<const uint8_t*>(src), static_cast<uint8_t*>(dst), count, f, d);
      break;
    case DataType::kInt8:
      divide(static_cast<const int8_t*>(src), static_cast<int8_t*>(dst), count, f, d);
      break;
    case DataType::kInt16:
      divide(static_cast<const int16_t*>(src), static_cast<int16_t*>(dst), count, f, d);
      break;
    case DataType::kUInt16:
      divide(static_cast<const uint16_t*>(src), static_cast<uint16_t*>(dst), count, f, d);
      break;
    case DataType::kInt32:
      divide(static_cast<const int32_t*>(src), static_cast<int32_t*>(dst), count, f, d);
      break;
    case DataType::kInt64:
      divide(static_cast<const int64_t*>(src), static_cast<int64_t*>(dst), count, f, d);
      break;
  }
}

namespace {

template <uint16_t (*Narrow)(float)>
void narrow_from_float(const float* src, uint16_t* dst, int64_t n, double f) {
  for (int64_t i = 0; i < n; ++i) dst[i] = Narrow(static_cast<float>(static_cast<double>(src[i]) * f));
}

template <float (*Widen)(uint16_t)>
void widen_to_float(const uint16_t* src, float* dst, int64_t n, double f) {
  for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<float>(static_cast<double>(Widen(src[i])) * f);
}

}  // namespace

void cast_into(DataType from, DataType to, const void* src, void* dst, int64_t count, const Scaling& s) {
  if (from == to) return scale_into(from, src, dst, count, s);
  const double f = s.factor;
  if (from == DataType::kFloat32 && to == DataType::kFloat16) {
    narrow_from_float<float_to_fp16>(static_cast<const float*>(src), static_cast<uint16_t*>(dst), count, f);
  } else if (from == DataType::kFloat32 && to == DataType::kBFloat16) {
    narrow_from_float<float_to_bf16>(static_cast<const float*>(src), static_cast<uint16_t*>(dst), count, f);
  } else if (from == DataType::kFloat16 && to == DataType::kFloat32) {
    widen_to_float<fp16_to_float>(static_cast<const uint16_t*>(src), static_cast<float*>(dst), count, f);
  } else if (from == DataType::kBFloat16 && to == DataType::kFloat32) {
    widen_to_float<bf16_to_float>(static_cast<const uint16_t*>(src), static_cast<float*>(dst), count, f);
  }
}

namespace {

template <typename T>
void fill_typed(void* data, int64_t n, ReduceOp op) {
  T v = T(0);
  if (op == ReduceOp::kProduct) v = T(1);
  if (op == ReduceOp::kMin) {
    v = std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  }
  if (op == ReduceOp::kMax) {
    v = std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  }
  std::fill(static_cast<T*>(data), static_cast<T*>(data) + n, v);
}

}  // namespace

void fill_identity(DataType dtype, ReduceOp op, void* data, int64_t count) {
  switch (dtype) {
    case DataType::kUInt8: fill_typed<uint8_t>(data, count, op); break;
    case DataType::kInt8: fill_typed<int8_t>(data, count, op); break;
    case DataType::kInt16: fill_typed<int16_t>(data, count, op); break;
    case DataType::kUInt16: fill_typed<uint16_t>(data, count, op); break;
    case DataType::kBool: {
      // Or (Max) starts from false, and (Min) from true.
      const uint8_t v = reduction_for(dtype, op) == ReduceOp::kMin ? 1 : 0;
      std::fill(static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + count, v);
      break;
    }
    case DataType::kInt32: fill_typed<int32_t>(data, count, op); break;
    case DataType::kInt64: fill_typed<int64_t>(data, count, op); break;
    case DataType::kFloat32: fill_typed<float>(data, count, op); break;
    case DataType::kFloat64: fill_typed<double>(data, count, op); break;
    case DataType::kFloat16:
    case DataType::kBFloat16: {
      float f = 0.0f;
      if (op == ReduceOp::kProduct) f = 1.0f;
      if (op == ReduceOp::kMin) f = std::numeric_limits<float>::infinity();
      if (op == ReduceOp::kMax) f = -std::numeric_limits<float>::infinity();
      const uint16_t h = dtype == DataType::kFloat16 ? float_to_fp16(f) : float_to_bf16(f);
      std::fill(static_cast<uint16_t*>(data), static_cast<uint16_t*>(data) + count, h);
      break;
    }
  }
}

void reduce_16bit(DataType dtype, ReduceOp op, const uint16_t* in, uint16_t* inout, int64_t count) {
  if (dtype == DataType::kFloat16) {
    reduce_16_op<fp16_to_float, float_to_fp16>(op, in, inout, count);
  } else {
    reduce_16_op<bf16_to_float, float_to_bf16>(op, in, inout, count);
  }
}

}  // namespace kolo
