// What the GPU suite (gpu_*_test.cc) runs on: the host double in CI (tests/cpp/gpu_double),
// or CUDA + NCCL on a machine with a GPU (cuda_test_device.cc). The suite reaches device memory,
// streams and events only through the device seam, so the same tests run on both.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <thread>

#include "comm/device/device.h"

namespace kolo {
namespace testing {

class TestDevice {
 public:
  virtual ~TestDevice() = default;
  virtual std::shared_ptr<DeviceBackend> backend() = 0;
  // Whether this is a real GPU.
  virtual bool real() const = 0;
  // The GPU this rank's tensors are on.
  virtual int ordinal() const { return 0; }
  // Holds `stream` up for `seconds` before what is enqueued on it next (a slow producer).
  virtual Status delay(DeviceStream stream, double seconds) = 0;
  // Batched copies launched so far, where the implementation counts them (-1: it does not).
  virtual int64_t batched_copies() const { return -1; }
  // Events queried so far (each a poll of device work) and host callbacks run, where the implementation
  // counts them (-1: it does not).
  virtual int64_t event_queries() const { return -1; }
  virtual int64_t host_callbacks_run() const { return -1; }
  // The thread that last launched a communicator's work, where the implementation knows (the double).
  virtual std::optional<std::thread::id> last_launch_thread() const { return std::nullopt; }
};

// Defined by the executable's implementation. Null with *why set: no such device here.
std::unique_ptr<TestDevice> make_test_device(std::string* why);

}  // namespace testing
}  // namespace kolo
