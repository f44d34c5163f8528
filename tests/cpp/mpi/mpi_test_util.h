// Helpers for tests that run under mpirun: typed buffers of any kolo dtype, exact expected values,
// and scoped engine settings.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/half.h"
#include "kolo/kolo.h"

namespace kolo {
namespace testing {

// A CPU buffer of any dtype, read and written as doubles (every value tests use is exact in each).
class Buffer {
 public:
  Buffer(DataType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
    int64_t n = 1;
    for (int64_t d : shape_) n *= d;
    n_ = static_cast<size_t>(n);
    bytes_.assign(n_ * dtype_size(dtype) + 1, 0);  // +1: a valid pointer even when empty
  }
  size_t size() const { return n_; }
  DataType dtype() const { return dtype_; }
  void* data() { return bytes_.data(); }
  TensorView view() {
    TensorView v;
    v.data = bytes_.data();
    v.dtype = dtype_;
    v.shape = shape_;
    return v;
  }

  void set(size_t i, double v) {
    char* p = bytes_.data() + i * dtype_size(dtype_);
    switch (dtype_) {
      case DataType::kUInt8: store<uint8_t>(p, static_cast<uint8_t>(v)); break;
      case DataType::kInt8: store<int8_t>(p, static_cast<int8_t>(v)); break;
      case DataType::kInt16: store<int16_t>(p, static_cast<int16_t>(v)); break;
      case DataType::kUInt16: store<uint16_t>(p, static_cast<uint16_t>(v)); break;
      case DataType::kBool: store<uint8_t>(p, v != 0 ? 1 : 0); break;
      case DataType::kInt32: store<int32_t>(p, static_cast<int32_t>(v)); break;
      case DataType::kInt64: store<int64_t>(p, static_cast<int64_t>(v)); break;
      case DataType::kFloat16: store<uint16_t>(p, float_to_fp16(static_cast<float>(v))); break;
      case DataType::kBFloat16: store<uint16_t>(p, float_to_bf16(static_cast<float>(v))); break;
      case DataType::kFloat32: store<float>(p, static_cast<float>(v)); break;
      case DataType::kFloat64: store<double>(p, v); break;
    }
  }

  double get(size_t i) const {
    const char* p = bytes_.data() + i * dtype_size(dtype_);
    switch (dtype_) {
      case DataType::kUInt8: return load<uint8_t>(p);
      case DataType::kInt8: return load<int8_t>(p);
      case DataType::kInt16: return load<int16_t>(p);
      case DataType::kUInt16: return load<uint16_t>(p);
      case DataType::kBool: return load<uint8_t>(p);
      case DataType::kInt32: return load<int32_t>(p);
      case DataType::kInt64: return static_cast<double>(load<int64_t>(p));
      case DataType::kFloat16: return fp16_to_float(load<uint16_t>(p));
      case DataType::kBFloat16: return bf16_to_float(load<uint16_t>(p));
      case DataType::kFloat32: return load<float>(p);
      case DataType::kFloat64: return load<double>(p);
    }
    return 0;
  }

  // The value `v` takes once stored in this dtype (rounding as the engine does).
  double rounded(double v) const {
    Buffer one(dtype_, {1});
    one.set(0, v);
    return one.get(0);
  }

 private:
  template <typename T>
  static void store(char* p, T v) { std::memcpy(p, &v, sizeof v); }
  template <typename T>
  static T load(const char* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }

  DataType dtype_;
  std::vector<int64_t> shape_;
  size_t n_ = 0;
  std::vector<char> bytes_;
};

// Reads the first `n` elements of an Output (allgather, alltoall) as doubles.
inline std::vector<double> values_of(const Output& out) {
  Buffer b(out.view.dtype, out.view.shape);
  std::memcpy(b.data(), out.view.data, b.size() * dtype_size(out.view.dtype));
  std::vector<double> v;
  for (size_t i = 0; i < b.size(); ++i) v.push_back(b.get(i));
  return v;
}

// Restarts the engine with `settings` for one scope, then with the defaults again. Collective:
// every rank must enter and leave the scope together.
class ScopedSettings {
 public:
  explicit ScopedSettings(const Settings& settings) {
    EXPECT_TRUE(shutdown().ok());
    Status s = init(settings);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  ~ScopedSettings() {
    EXPECT_TRUE(shutdown().ok());
    EXPECT_TRUE(init().ok());
  }
};

// Whether kolo may run collectives on several threads at once (callers driving their ops, process sets):
// under MPI where it gave MPI_THREAD_MULTIPLE, always under Gloo.
inline bool threads_multiple() { return mpi_threads_supported() || controller() == "gloo"; }

inline const std::vector<DataType>& all_dtypes() {
  // Every dtype whose reductions are arithmetic (bool, whose are logical, is tested on its own).
  static const std::vector<DataType> d = {DataType::kUInt8,   DataType::kInt8,     DataType::kUInt16,
                                          DataType::kInt16,   DataType::kInt32,    DataType::kInt64,
                                          DataType::kFloat16, DataType::kBFloat16, DataType::kFloat32,
                                          DataType::kFloat64};
  return d;
}

inline std::string dtype_param_name(const ::testing::TestParamInfo<DataType>& info) { return dtype_name(info.param); }

}  // namespace testing
}  // namespace kolo
