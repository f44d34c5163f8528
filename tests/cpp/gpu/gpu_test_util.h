// Helpers for the GPU suite: tensors in device memory, filled and read through the device seam,
// with the CPU suite's typed host buffers (mpi/mpi_test_util.h) on the host side.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "gpu/test_device.h"
#include "mpi/mpi_test_util.h"

namespace kolo {
namespace testing {

// The device the suite runs on (set by gpu_main.cc) and the GPU ordinal its tensors are on.
TestDevice& test_device();
int test_ordinal();

// Blocks until everything enqueued so far on `stream` has run.
inline void sync_stream(DeviceStream stream) {
  DeviceBackend& b = *test_device().backend();
  DeviceEvent e = nullptr;
  ASSERT_TRUE(b.create_event(test_ordinal(), false, &e).ok());
  ASSERT_TRUE(b.record(e, stream).ok());
  ASSERT_TRUE(b.synchronize(e).ok());
  b.destroy_event(e);
}

// A tensor in device memory, freed with the object.
class DeviceTensor {
 public:
  DeviceTensor(DataType dtype, std::vector<int64_t> shape) : dtype_(dtype), shape_(std::move(shape)) {
    Status s = test_device().backend()->allocate(test_ordinal(), bytes(), &data_);
    EXPECT_TRUE(s.ok()) << s.message();
  }
  explicit DeviceTensor(const Buffer& host) : DeviceTensor(host.dtype(), host_shape(host)) { upload(host); }
  ~DeviceTensor() { test_device().backend()->free(data_); }
  DeviceTensor(const DeviceTensor&) = delete;
  DeviceTensor& operator=(const DeviceTensor&) = delete;

  int64_t bytes() const { return num_elements(shape_) * static_cast<int64_t>(dtype_size(dtype_)); }
  void* data() const { return data_; }
  TensorView view(DeviceStream stream = nullptr) const {
    TensorView v;
    v.data = data_;
    v.dtype = dtype_;
    v.shape = shape_;
    v.device = Device::CUDA(test_ordinal());
    v.stream = stream;
    return v;
  }
  // Copies the host buffer in; returns once it has landed.
  void upload(Buffer host) {
    ASSERT_EQ(static_cast<int64_t>(host.size() * dtype_size(dtype_)), bytes());
    ASSERT_TRUE(test_device().backend()->copy(data_, host.data(), bytes(), nullptr).ok());
    sync_stream(nullptr);
  }
  Buffer download() const {
    Buffer host(dtype_, shape_);
    EXPECT_TRUE(test_device().backend()->copy(host.data(), data_, bytes(), nullptr).ok());
    sync_stream(nullptr);
    return host;
  }

 private:
  static std::vector<int64_t> host_shape(const Buffer& b) { return {static_cast<int64_t>(b.size())}; }

  DataType dtype_;
  std::vector<int64_t> shape_;
  void* data_ = nullptr;
};

// A stream of the test's own, as a framework has.
class TestStream {
 public:
  TestStream() { EXPECT_TRUE(test_device().backend()->create_stream(test_ordinal(), &s_).ok()); }
  ~TestStream() {
    sync_stream(s_);
    test_device().backend()->destroy_stream(s_);
  }
  DeviceStream get() const { return s_; }

 private:
  DeviceStream s_ = nullptr;
};

// The bytes of a device tensor and a host buffer are the same.
inline ::testing::AssertionResult same_bytes(const Buffer& a, const Buffer& b) {
  if (a.size() != b.size()) return ::testing::AssertionFailure() << "sizes " << a.size() << " and " << b.size();
  for (size_t i = 0; i < a.size(); ++i) {
    if (a.get(i) != b.get(i) && !(a.get(i) != a.get(i) && b.get(i) != b.get(i))) {
      return ::testing::AssertionFailure() << "element " << i << ": " << a.get(i) << " and " << b.get(i);
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace testing
}  // namespace kolo
