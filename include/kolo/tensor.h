// A framework-neutral view of a tensor: kolo never owns or allocates the memory behind a view.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "kolo/export.h"

namespace kolo {

// Values are part of the C ABI (c_api.h mirrors them) and of the wire format: append, never renumber.
enum class DataType : int32_t {
  kUInt8 = 0,
  kInt8 = 1,
  kInt32 = 2,
  kInt64 = 3,
  kFloat16 = 4,
  kBFloat16 = 5,
  kFloat32 = 6,
  kFloat64 = 7,
  kInt16 = 8,
  kBool = 9,  // one byte, 0 or 1; reductions are logical (Sum, Average, Max: or; Min, Product: and)
  kUInt16 = 10,
};
constexpr int kNumDataTypes = 11;

enum class DeviceType : int32_t {
  kCPU = 0,
  kCUDA = 1,
};

struct Device {
  DeviceType type = DeviceType::kCPU;
  int32_t index = 0;  // the CUDA ordinal; 0 for the CPU

  static Device CPU() { return {}; }
  static Device CUDA(int32_t ordinal) { return {DeviceType::kCUDA, ordinal}; }
  bool operator==(const Device& o) const { return type == o.type && index == o.index; }
  bool operator!=(const Device& o) const { return !(*this == o); }
};

// Sizes in elements. An empty `strides` means contiguous row-major; kolo moves only contiguous
// tensors and says so when given anything else, rather than copying behind the caller's back.
struct KOLO_EXPORT TensorView {
  void* data = nullptr;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  Device device;
  // For CUDA tensors, the cudaStream_t the producer wrote the data on (nullptr: the legacy default stream).
  void* stream = nullptr;

  int64_t num_elements() const;
  int64_t size_bytes() const;
  bool is_contiguous() const;
};

KOLO_EXPORT size_t dtype_size(DataType dtype);
KOLO_EXPORT const char* dtype_name(DataType dtype);
KOLO_EXPORT bool dtype_is_valid(DataType dtype);
KOLO_EXPORT bool dtype_is_floating(DataType dtype);
KOLO_EXPORT std::string shape_string(const std::vector<int64_t>& shape);
// The product of the dimensions (1 for a scalar).
KOLO_EXPORT int64_t num_elements(const std::vector<int64_t>& shape);

// Convenience for C++ callers: a contiguous CPU view of a typed buffer.
template <typename T>
struct DataTypeOf;
template <> struct DataTypeOf<uint8_t> { static constexpr DataType value = DataType::kUInt8; };
template <> struct DataTypeOf<int8_t> { static constexpr DataType value = DataType::kInt8; };
template <> struct DataTypeOf<int16_t> { static constexpr DataType value = DataType::kInt16; };
template <> struct DataTypeOf<uint16_t> { static constexpr DataType value = DataType::kUInt16; };
template <> struct DataTypeOf<bool> { static constexpr DataType value = DataType::kBool; };
template <> struct DataTypeOf<int32_t> { static constexpr DataType value = DataType::kInt32; };
template <> struct DataTypeOf<int64_t> { static constexpr DataType value = DataType::kInt64; };
template <> struct DataTypeOf<float> { static constexpr DataType value = DataType::kFloat32; };
template <> struct DataTypeOf<double> { static constexpr DataType value = DataType::kFloat64; };

template <typename T>
TensorView cpu_view(T* data, std::vector<int64_t> shape) {
  TensorView v;
  v.data = data;
  v.dtype = DataTypeOf<T>::value;
  v.shape = std::move(shape);
  return v;
}

template <typename T>
TensorView cpu_view(std::vector<T>& data) {
  return cpu_view(data.data(), {static_cast<int64_t>(data.size())});
}

}  // namespace kolo
