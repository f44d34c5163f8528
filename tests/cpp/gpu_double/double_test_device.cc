// The GPU suite on the host double.
#include <chrono>
#include <thread>

#include "gpu/test_device.h"
#include "gpu_double/host_double.h"

namespace kolo {
namespace testing {
namespace {

class DoubleTestDevice : public TestDevice {
 public:
  std::shared_ptr<DeviceBackend> backend() override { return double_; }
  bool real() const override { return false; }
  Status delay(DeviceStream stream, double seconds) override {
    double_->enqueue(stream, [seconds] { std::this_thread::sleep_for(std::chrono::duration<double>(seconds)); });
    return Status::OK();
  }
  int64_t batched_copies() const override { return double_->batched_copies(); }
  int64_t event_queries() const override { return double_->queries(); }
  int64_t host_callbacks_run() const override { return double_->host_callbacks_run(); }
  std::optional<std::thread::id> last_launch_thread() const override { return double_->last_launch_thread(); }

 private:
  std::shared_ptr<HostDouble> double_ = std::make_shared<HostDouble>();
};

}  // namespace

std::unique_ptr<TestDevice> make_test_device(std::string*) { return std::make_unique<DoubleTestDevice>(); }

}  // namespace testing
}  // namespace kolo
