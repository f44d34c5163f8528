#include "cuda/nccl_comm.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <thread>
#include <vector>

#include "cuda/cuda_status.h"
#include "cuda/nccl_library.h"

namespace kolo {
namespace {

double now_seconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

Status nccl_type(DataType dtype, ncclDataType_t* out) {
  switch (dtype) {
    case DataType::kUInt8:
    case DataType::kBool: *out = ncclUint8; return Status::OK();  // 0 or 1, reduced by max and min
    case DataType::kInt16:
    case DataType::kUInt16: break;  // NCCL has neither: the device path reduces them as int32
    case DataType::kInt8: *out = ncclInt8; return Status::OK();
    case DataType::kInt32: *out = ncclInt32; return Status::OK();
    case DataType::kInt64: *out = ncclInt64; return Status::OK();
    case DataType::kFloat16: *out = ncclFloat16; return Status::OK();
    case DataType::kBFloat16: *out = ncclBfloat16; return Status::OK();
    case DataType::kFloat32: *out = ncclFloat32; return Status::OK();
    case DataType::kFloat64: *out = ncclFloat64; return Status::OK();
  }
  return Status::InvalidArgument("NCCL has no type for this dtype");
}

Status nccl_op(ReduceOp op, ncclRedOp_t* out) {
  switch (op) {
    case ReduceOp::kSum: *out = ncclSum; return Status::OK();
    case ReduceOp::kMin: *out = ncclMin; return Status::OK();
    case ReduceOp::kMax: *out = ncclMax; return Status::OK();
    case ReduceOp::kProduct: *out = ncclProd; return Status::OK();
    case ReduceOp::kAverage: break;  // kolo divides afterwards, as on the CPU
    case ReduceOp::kAdasum: break;   // not an NCCL op: its own algorithm
  }
  return Status::InvalidArgument(std::string("the device communicator takes no ") + reduce_op_name(op));
}

// Both, for the reducing calls.
Status nccl_type_and_op(DataType dtype, ReduceOp op, ncclDataType_t* t, ncclRedOp_t* o) {
  Status s = nccl_type(dtype, t);
  return s.ok() ? nccl_op(op, o) : s;
}

class NcclComm : public DeviceComm {
 public:
  // How long survivors may take to meet in ncclCommShrink (at most the communicator's own bound).
  static constexpr double kShrinkSeconds = 30.0;

  NcclComm(const NcclApi& api, ncclComm_t comm, int size, int rank, int ordinal, double timeout)
      : api_(api), comm_(comm), size_(size), rank_(rank), ordinal_(ordinal), timeout_(timeout) {}
  ~NcclComm() override {
    if (comm_ == nullptr) return;
    // At exit, CUDA may have unloaded before kolo's own exit hook runs: NCCL cannot be driven then.
    int device = 0;
    if (cudaGetDevice(&device) == cudaErrorCudartUnloading) return;
    // Finalize flushes what is still queued; if a peer keeps it from finishing, abort instead.
    const ncclResult_t r = api_.CommFinalize(comm_);
    if ((r == ncclSuccess || r == ncclInProgress) && wait_ready("ncclCommFinalize", 10.0).ok()) {
      api_.CommDestroy(comm_);
      return;
    }
    abort();
  }

  int size() const override { return size_; }
  int rank() const override { return rank_; }

  Status allreduce(const void* send, void* recv, int64_t count, DataType dtype, ReduceOp op,
                   DeviceStream stream) override {
    ncclDataType_t t = ncclFloat32;
    ncclRedOp_t o = ncclSum;  // set by nccl_type_and_op; initialized for -O3's maybe-uninitialized
    Status s = nccl_type_and_op(dtype, op, &t, &o);
    if (!s.ok()) return s;
    return issue(api_.AllReduce(send, recv, static_cast<size_t>(count), t, o, comm_, stream_of(stream)), "ncclAllReduce");
  }

  Status reducescatter(const void* send, void* recv, int64_t recv_count, DataType dtype, ReduceOp op,
                       DeviceStream stream) override {
    ncclDataType_t t = ncclFloat32;
    ncclRedOp_t o = ncclSum;  // set by nccl_type_and_op; initialized for -O3's maybe-uninitialized
    Status s = nccl_type_and_op(dtype, op, &t, &o);
    if (!s.ok()) return s;
    return issue(api_.ReduceScatter(send, recv, static_cast<size_t>(recv_count), t, o, comm_, stream_of(stream)),
                 "ncclReduceScatter");
  }

  Status allgather(const void* send, void* recv, int64_t send_count, DataType dtype, DeviceStream stream) override {
    ncclDataType_t t = ncclFloat32;
    Status s = nccl_type(dtype, &t);
    if (!s.ok()) return s;
    return issue(api_.AllGather(send, recv, static_cast<size_t>(send_count), t, comm_, stream_of(stream)), "ncclAllGather");
  }

  Status broadcast(const void* send, void* recv, int64_t count, DataType dtype, int root, DeviceStream stream) override {
    ncclDataType_t t = ncclFloat32;
    Status s = nccl_type(dtype, &t);
    if (!s.ok()) return s;
    return issue(api_.Broadcast(send, recv, static_cast<size_t>(count), t, root, comm_, stream_of(stream)), "ncclBroadcast");
  }

  Status send(const void* data, int64_t bytes, int peer, DeviceStream stream) override {
    return issue(api_.Send(data, static_cast<size_t>(bytes), ncclUint8, peer, comm_, stream_of(stream)), "ncclSend");
  }

  Status recv(void* data, int64_t bytes, int peer, DeviceStream stream) override {
    return issue(api_.Recv(data, static_cast<size_t>(bytes), ncclUint8, peer, comm_, stream_of(stream)), "ncclRecv");
  }

  Status group_start() override {
    if (aborted_) return Status::Aborted("the NCCL communicator was aborted");
    in_group_ = true;
    return nccl_status(api_.GroupStart(), "ncclGroupStart", comm_);
  }

  Status group_end() override {
    in_group_ = false;
    return issue(api_.GroupEnd(), "ncclGroupEnd");
  }

  Status async_error() override {
    if (aborted_) return Status::Aborted("the NCCL communicator was aborted");
    ncclResult_t r = ncclSuccess;
    Status s = nccl_status(api_.CommGetAsyncError(comm_, &r), "ncclCommGetAsyncError", comm_);
    if (!s.ok()) return s;
    return nccl_status(r, "NCCL", comm_);
  }

  void abort() override {
    if (aborted_ || comm_ == nullptr) return;
    aborted_ = true;
    api_.CommAbort(comm_);
    comm_ = nullptr;
  }

  Status shrink(const std::vector<int>& excluded, std::unique_ptr<DeviceComm>* out,
                const std::function<void()>& while_waiting) override {
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 27, 0)
    if (aborted_) return Status::Aborted("ncclCommShrink: the NCCL communicator was aborted");
    if (api_.CommShrink == nullptr) return DeviceComm::shrink(excluded, out, while_waiting);  // NCCL before 2.27
    DeviceGuard guard(ordinal_);
    if (!guard.status().ok()) return guard.status();
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    std::vector<int> list = excluded;
    ncclComm_t fresh = nullptr;
    // ABORT: the work still queued on this communicator waits for the lost peers; it is stopped first.
    const ncclResult_t r =
        api_.CommShrink(comm_, list.data(), static_cast<int>(list.size()), &fresh, &config, NCCL_SHRINK_ABORT);
    if (r != ncclSuccess && r != ncclInProgress) return nccl_status(r, "ncclCommShrink", comm_);
    // Nonblocking, NCCL writes the new handle a little later (seen on 2.28: ncclSuccess, handle still
    // null for about 20 ms): poll it, within the shrink's bound. Survivors meet within a second; one that
    // never calls (its own shrink refused) keeps the others here until the bound.
    const double bound = std::min(timeout_, kShrinkSeconds);
    const double deadline = now_seconds() + bound;
    while (__atomic_load_n(&fresh, __ATOMIC_ACQUIRE) == nullptr) {
      if (now_seconds() > deadline) {
        return Status::Aborted("ncclCommShrink gave no communicator within " + std::to_string(static_cast<int>(bound)) +
                               " s (a survivor that never called it)");
      }
      if (while_waiting) while_waiting();
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    const int below = static_cast<int>(std::count_if(excluded.begin(), excluded.end(), [&](int x) { return x < rank_; }));
    auto nccl = std::make_unique<NcclComm>(api_, fresh, size_ - static_cast<int>(excluded.size()), rank_ - below,
                                           ordinal_, timeout_);
    Status s = nccl->wait_ready("ncclCommShrink", bound, while_waiting);
    if (!s.ok()) return s;
    *out = std::move(nccl);
    return Status::OK();
#else
    return DeviceComm::shrink(excluded, out, while_waiting);  // NCCL before 2.27 has no ncclCommShrink
#endif
  }

  // Polls the nonblocking communicator until the last call is done with; gives up (aborting the
  // communicator) after `seconds`.
  Status wait_ready(const char* what, double seconds, const std::function<void()>& while_waiting = {}) {
    const double deadline = now_seconds() + seconds;
    for (int i = 0;; ++i) {
      if (aborted_) return Status::Aborted(std::string(what) + ": the NCCL communicator was aborted");
      ncclResult_t r = ncclSuccess;
      Status s = nccl_status(api_.CommGetAsyncError(comm_, &r), "ncclCommGetAsyncError", comm_);
      if (!s.ok()) return s;
      if (r != ncclInProgress) return nccl_status(r, what, comm_);
      if (now_seconds() > deadline) {
        abort();
        return Status::Aborted(std::string(what) + " did not complete within " + std::to_string(static_cast<int>(seconds)) +
                               " s (a peer that never came, or froze); the NCCL communicator was aborted");
      }
      if (while_waiting) while_waiting();
      if (i < 100) {
        sched_yield();
      } else {
        std::this_thread::sleep_for(std::chrono::microseconds(50));
      }
    }
  }

 private:
  static cudaStream_t stream_of(DeviceStream s) { return static_cast<cudaStream_t>(s); }

  // A call in nonblocking mode: queued (ncclInProgress) or done; either way the communicator must
  // be ready before the next call. Inside a group NCCL only records the call.
  Status issue(ncclResult_t r, const char* what) {
    if (aborted_) return Status::Aborted(std::string(what) + ": the NCCL communicator was aborted");
    if (r != ncclSuccess && r != ncclInProgress) return nccl_status(r, what, comm_);
    if (in_group_) return Status::OK();
    return wait_ready(what, timeout_);
  }

  const NcclApi& api_;
  ncclComm_t comm_;
  int size_;
  int rank_;
  int ordinal_;
  double timeout_;
  bool aborted_ = false;
  bool in_group_ = false;
};

}  // namespace

Status make_nccl_comm(int ordinal, const CommMembers& members, double timeout_seconds,
                      std::unique_ptr<DeviceComm>* out) {
  ncclUniqueId id;
  if (members.id.size() != sizeof(id.internal)) {
    return Status::InvalidArgument("an NCCL communicator id has " + std::to_string(sizeof(id.internal)) + " bytes, not " +
                                   std::to_string(members.id.size()));
  }
  std::memcpy(id.internal, members.id.data(), sizeof(id.internal));
  const NcclApi* api = nullptr;
  Status loaded = nccl_api(&api);
  if (!loaded.ok()) return loaded;
  DeviceGuard guard(ordinal);
  if (!guard.status().ok()) return guard.status();
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  ncclComm_t comm = nullptr;
  const ncclResult_t r = api->CommInitRankConfig(&comm, members.size, id, members.rank, &config);
  if (r != ncclSuccess && r != ncclInProgress) return nccl_status(r, "ncclCommInitRankConfig", comm);
  auto nccl = std::make_unique<NcclComm>(*api, comm, members.size, members.rank, ordinal, timeout_seconds);
  Status s = nccl->wait_ready("ncclCommInitRankConfig", timeout_seconds);
  if (!s.ok()) return s;
  *out = std::move(nccl);
  return Status::OK();
}

}  // namespace kolo
