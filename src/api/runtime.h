// The process's one kolo instance: MPI's lifetime, the engine while initialized, and the handle
// table. Everything global about kolo is here, behind one mutex; the engine itself has no globals.
#pragma once

#include <memory>
#include <mutex>

#include "comm/device/device_context.h"
#include "comm/mpi/mpi_context.h"
#include "comm/mpi/mpi_runtime.h"
#include "device/device.h"
#include "engine/engine.h"
#include "engine/handle_table.h"

namespace kolo {

class Runtime {
 public:
  static Runtime& instance();

  Status init(const Settings& overrides);
  Status shutdown();
  bool initialized();
  // The running engine, or null; shared so that a concurrent shutdown cannot pull it away mid-call.
  std::shared_ptr<Engine> engine();
  HandleTable& handles() { return handles_; }
  // The GPU kolo's device collectives use while initialized, or null (no GPU support, or no GPU).
  std::shared_ptr<DeviceContext> device();
  // The device backend, which outlives init() and shutdown() (events and memory kolo handed out
  // are released through it).
  std::shared_ptr<DeviceBackend> device_backend();
  // Tests put the host double here before init(), in place of CUDA.
  void use_device_backend(std::shared_ptr<DeviceBackend> backend);
  bool mpi_threads_supported();
  // Why no engine is running, for the error of an op submitted without one.
  std::string not_running_reason();

 private:
  Runtime() = default;
  static void at_exit();
  // Device collectives on the registry when a GPU is usable; else why not, for the errors.
  void add_device_collectives(const Config& config, bool hierarchical_allreduce, CollectiveRegistry* registry);

  std::mutex mu_;
  MpiRuntime mpi_;
  std::unique_ptr<MpiContext> context_;
  std::shared_ptr<DeviceBackend> backend_;
  bool backend_chosen_ = false;
  std::shared_ptr<DeviceContext> device_;
  std::shared_ptr<Engine> engine_;
  HandleTable handles_;
  bool exit_hook_ = false;
  bool shut_down_ = false;  // after shutdown(), ops say so rather than "not initialized"
};

}  // namespace kolo
