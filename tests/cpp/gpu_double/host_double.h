// The host double: the device seam (src/comm/device/device.h) over host memory, for tests only. Every
// line of kolo's GPU path above the seam runs through it in CI, on machines without a GPU.
//
// - "Device" memory is host memory the double allocated; every kernel and communicator call checks
//   that the pointers it is given lie in such memory, so host pointers on the device path fail.
// - A stream is a worker thread running its work in order; an event completes when the worker
//   reaches it; a stream waits on an event without the host waiting, as in CUDA.
// - The batched copy runs batch_math.h's functions (the kernel's own arithmetic and index math).
// - A communicator is an MPI communicator of the members, driven with nonblocking MPI on the
//   stream's worker, so abort() stops it even when a peer never answers; with ULFM it shrinks (revoke,
//   shrink) as NCCL's does.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <thread>

#include "comm/device/device.h"

namespace kolo {
namespace testing {

class HostDouble : public DeviceBackend {
 public:
  HostDouble();
  ~HostDouble() override;

  std::string description() const override { return "host double"; }
  Status usable() override;
  Status bind(int) override { return Status::OK(); }
  Status allocate(int ordinal, int64_t bytes, void** data) override;
  void free(void* data) override;
  Status copy(void* dst, const void* src, int64_t bytes, DeviceStream stream) override;
  Status create_stream(int ordinal, DeviceStream* stream) override;
  void destroy_stream(DeviceStream stream) override;
  Status create_event(int ordinal, bool timing, DeviceEvent* event) override;
  void destroy_event(DeviceEvent event) override;
  Status record(DeviceEvent event, DeviceStream stream) override;
  Status wait(DeviceStream stream, DeviceEvent event) override;
  Status query(DeviceEvent event, bool* done) override;
  Status synchronize(DeviceEvent event) override;
  Status elapsed(DeviceEvent start, DeviceEvent end, double* seconds) override;
  // Runs on the stream's worker, in order, as cudaLaunchHostFunc on CUDA's callback thread.
  Status host_callback(DeviceStream stream, std::function<void()> callback) override;
  Status batched_copy(const std::vector<CopyPiece>& pieces, const CopyTransform& transform,
                      DeviceStream stream) override;
  Status unique_id(std::string* id) override;
  Status create_comm(int ordinal, const CommMembers& members, std::unique_ptr<DeviceComm>* comm) override;

  // ---- For tests, beyond the seam ----
  // Runs `work` on the stream, in order with its other work (a slow producer, say).
  void enqueue(DeviceStream stream, std::function<void()> work);
  // Whether [data, data + bytes) lies in memory this double allocated.
  bool is_device_memory(const void* data, int64_t bytes) const;
  // Batched copies launched so far (one per call), and allocations alive.
  int64_t batched_copies() const { return batched_copies_; }
  // Events queried so far (each is a poll of device work), and host callbacks that have run.
  int64_t queries() const { return queries_; }
  int64_t host_callbacks_run() const { return host_callbacks_run_; }
  size_t live_allocations() const;
  // Communicators made by create_comm, and made by shrinking one (ULFM underneath).
  int comms_made() const { return comms_made_; }
  int comms_shrunk() const { return comms_shrunk_; }
  void count_shrink() { ++comms_shrunk_; }
  // The thread that last called a communicator (kolo's, or a caller's that drives its op).
  void note_launch();
  std::thread::id last_launch_thread() const;

  struct Stream;
  struct Event;

 private:
  Stream* stream_of(DeviceStream s);
  Status check_device(const void* data, int64_t bytes, const std::string& what) const;

  mutable std::mutex mu_;
  std::map<const char*, int64_t> allocations_;  // start -> bytes
  std::unique_ptr<Stream> default_stream_;
  std::atomic<int64_t> batched_copies_{0};
  std::atomic<int64_t> queries_{0};
  std::atomic<int64_t> host_callbacks_run_{0};
  std::atomic<int> comms_made_{0};
  std::atomic<int> comms_shrunk_{0};
  int64_t next_id_ = 0;
  std::thread::id last_launch_thread_;  // under mu_
};

}  // namespace testing
}  // namespace kolo
