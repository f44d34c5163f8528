// One process's GPU as kolo's device collectives use it: the backend (CUDA + NCCL, or the tests'
// host double), the GPU kolo's ops run on, its communication stream, pooled events, the fusion
// buffer, and the communicators (the job's, this host's, and across hosts), each made the first
// time an op needs it, with its id sent over the instance's groups (comm/context.h).
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "comm/collective.h"
#include "comm/joined.h"
#include "comm/context.h"
#include "comm/device/device.h"

namespace kolo {

// An event that goes back to its pool when the last owner lets go; get() is the DeviceEvent.
using PooledEvent = std::shared_ptr<void>;

class DeviceContext {
 public:
  DeviceContext(std::shared_ptr<DeviceBackend> backend, const Context& context);
  ~DeviceContext();
  DeviceContext(const DeviceContext&) = delete;
  DeviceContext& operator=(const DeviceContext&) = delete;

  DeviceBackend& backend() { return *backend_; }
  const std::shared_ptr<DeviceBackend>& shared_backend() const { return backend_; }
  const Context& context() const { return context_; }
  // "NCCL", or what the backend is, for collective names in the timeline.
  const std::string& library() const { return library_; }

  // On kolo's thread, at the start of every device op: the first binds kolo's thread to the
  // tensor's GPU and makes the communication stream; kolo then drives that one GPU, and an op on
  // another fails, naming both. `index` < 0 (a joined rank without a tensor): the bound GPU, or 0.
  Status ensure(const Device& device, const std::string& tensor);
  DeviceStream stream() const { return stream_; }
  int ordinal() const { return ordinal_; }
  // Work launched from a thread that may have another device current (a driving caller's, see
  // Engine::drive): the bound GPU is that thread's device while this lives, its own again after.
  class OnBoundDevice {
   public:
    explicit OnBoundDevice(DeviceContext& context);
    ~OnBoundDevice();
    OnBoundDevice(const OnBoundDevice&) = delete;
    OnBoundDevice& operator=(const OnBoundDevice&) = delete;
    const Status& status() const { return status_; }

   private:
    DeviceBackend& backend_;
    int previous_ = -1;
    Status status_;
  };
  // Why a tensor on `device` cannot be used by kolo's GPU ops (once kolo drives another GPU), or OK.
  // Thread-safe: checked at enqueue, so that a rank on the wrong GPU fails at once, alone.
  Status check_device(const Device& device) const;

  // On the caller's thread, at enqueue: an event recorded on the tensor's stream, after the work
  // that produces it. Thread-safe.
  Status record_ready(const TensorView& view, PooledEvent* event);
  // A pooled event on the bound GPU.
  Status event(bool timing, PooledEvent* out);
  // The communication stream waits, on the device, for every piece's ready event.
  Status wait_ready(const CollectiveCall& call);

  // The fusion buffer, at least `bytes`. Shared: work still running keeps a replaced buffer alive.
  Status fusion_buffer(int64_t bytes, std::shared_ptr<void>* buffer);
  // Device memory kolo owns (outputs it allocates, joined ranks' stand-ins), freed when the last
  // owner lets go, even after kolo has shut down.
  OwnMemory own_memory();
  // Fills memory with a reduce op's identity on the communication stream.
  FillIdentity fill_identity();

  // The communicators: every rank of the job; the ranks on this host; the ranks of this local rank,
  // one per host.
  enum class Group { kWorld = 0, kLocal = 1, kCross = 2 };
  static constexpr int kGroups = 3;
  Status comm(Group group, DeviceComm** comm);
  // Whether work on `groups`' communicators can be launched without waiting on any peer (so from a
  // caller's thread): a GPU is bound and every one of those communicators is made and unbroken.
  bool launches_without_peers(const std::vector<Group>& groups) const;
  // The group's ranks as the instance's context has them (its members, in their order), and their job
  // ranks; the communicator made for it so far, or null.
  kolo::Group& group(Group group) const;
  std::vector<int> members(Group group) const;
  // Who is in the group, in words: "the job", "this host", "across hosts".
  static const char* describe(Group group);
  DeviceComm* made(Group group) const { return comms_[static_cast<int>(group)].get(); }
  // Before any op: the group's communicator is `comm` (one shrunk from the last context's after a peer
  // was lost in place) instead of a new one. Fails, keeping nothing, if its members are not the group's.
  Status adopt(Group group, std::unique_ptr<DeviceComm> comm);
  // A communicator has failed: none is used again (ops fail with `why`).
  void poison(const Status& why);
  // After a peer lost in place, once no engine uses this context: aborts every communicator (the lost
  // peer is in them), which frees what the library holds for them; it is never used again.
  void abort_comms(const Status& why);
  // Waits up to `seconds` for the work queued on the communication stream to end, calling
  // `while_waiting` between polls; if it does not, aborts the communicators (what waits on a lost peer then
  // ends) and returns false.
  bool finish_work(double seconds, const std::function<void()>& while_waiting = {});

 private:
  struct EventPool;

  std::shared_ptr<DeviceBackend> backend_;
  const Context& context_;
  std::string library_;
  std::atomic<int> ordinal_{-1};
  DeviceStream stream_ = nullptr;
  std::shared_ptr<EventPool> events_;
  std::shared_ptr<void> fusion_;
  int64_t fusion_bytes_ = 0;
  std::unique_ptr<DeviceComm> comms_[3];
  Status poisoned_;
};

}  // namespace kolo
