// What the GPU benchmarks share: the device they run on (CUDA + NCCL, or the host double where no
// GPU is), and a rig on it: one stream, memory that frees itself, copies to and from the host that
// are done when they return, and timing between device events on the stream.
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>

#include "comm/device/device.h"
#include "gpu_double/host_double.h"
#include "gradient_set.h"
#if KOLO_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

namespace bench {

// The exit status of a benchmark that cannot run here (ctest's "skipped").
constexpr int kSkipped = 77;

inline std::string default_device() {
#if KOLO_HAVE_CUDA
  return "cuda";
#else
  return "double";
#endif
}

// "cuda" or "double". kUnsupported: no usable GPU here (the caller exits kSkipped, saying why);
// kInvalidArgument: neither name.
inline kolo::Status open_device(const std::string& kind, std::shared_ptr<kolo::DeviceBackend>* out) {
  if (kind == "double") {
    // Not asked usable(): that wants MPI, which the double needs only for communicators.
    *out = std::make_shared<kolo::testing::HostDouble>();
    return kolo::Status::OK();
  }
  if (kind != "cuda") return kolo::Status::InvalidArgument("--device takes cuda or double, not '" + kind + "'");
#if KOLO_HAVE_CUDA
  std::shared_ptr<kolo::DeviceBackend> b = kolo::make_cuda_backend(120.0);
  kolo::Status s = b->usable();
  if (!s.ok()) return s;
  *out = std::move(b);
  return kolo::Status::OK();
#else
  return kolo::Status::Unsupported("kolo was built without CUDA and NCCL (--device double runs on the host double)");
#endif
}

// What a benchmark does when open_device() failed: says why (on rank 0) and returns its exit
// status, kSkipped where no GPU is usable, 2 for a wrong --device.
inline int refuse(const kolo::Status& why, int rank) {
  const bool skipped = why.code() == kolo::StatusCode::kUnsupported;
  if (rank == 0) std::fprintf(skipped ? stdout : stderr, "%s%s\n", skipped ? "skipped: " : "", why.message().c_str());
  return skipped ? kSkipped : 2;
}

class DeviceRig {
 public:
  // Binds the calling thread to `ordinal` (kernels launch on the current device).
  DeviceRig(std::shared_ptr<kolo::DeviceBackend> backend, int ordinal)
      : backend_(std::move(backend)), ordinal_(ordinal) {
    check(backend_->bind(ordinal_));
    check(backend_->create_stream(ordinal_, &stream_));
    check(backend_->create_event(ordinal_, true, &start_));
    check(backend_->create_event(ordinal_, true, &end_));
  }
  ~DeviceRig() {
    backend_->destroy_event(start_);
    backend_->destroy_event(end_);
    backend_->destroy_stream(stream_);
  }
  DeviceRig(const DeviceRig&) = delete;
  DeviceRig& operator=(const DeviceRig&) = delete;

  kolo::DeviceBackend& backend() { return *backend_; }
  kolo::DeviceStream stream() const { return stream_; }
  int ordinal() const { return ordinal_; }

  std::shared_ptr<void> allocate(int64_t bytes) {
    void* p = nullptr;
    check(backend_->allocate(ordinal_, bytes, &p));
    std::shared_ptr<kolo::DeviceBackend> b = backend_;
    return std::shared_ptr<void>(p, [b](void* q) { b->free(q); });
  }

  // Host to device or back, in order on the stream; finished on return.
  void transfer(void* dst, const void* src, int64_t bytes) {
    check(backend_->copy(dst, src, bytes, stream_));
    finish();
  }

  // Zeros `count` elements (the batched copy's fill with a Sum's identity), so that a result
  // checked afterwards cannot be one left over from an earlier run.
  void clear(void* data, int64_t count, kolo::DataType dtype) {
    check(backend_->batched_copy({kolo::CopyPiece{nullptr, data, count}},
                                 kolo::CopyTransform{dtype, dtype, 1.0, 1, kolo::ReduceOp::kSum}, stream_));
  }

  // Blocks until everything enqueued on the stream so far has run.
  void finish() {
    check(backend_->record(end_, stream_));
    check(backend_->synchronize(end_));
  }

  // Seconds per repetition of `enqueue` (which puts work on the stream) between device events
  // around `reps` repetitions: the GPU's time, plus whatever it waited for the host to launch.
  double time(int reps, const std::function<void()>& enqueue) {
    check(backend_->record(start_, stream_));
    for (int r = 0; r < reps; ++r) enqueue();
    check(backend_->record(end_, stream_));
    check(backend_->synchronize(end_));
    double seconds = 0.0;
    check(backend_->elapsed(start_, end_, &seconds));
    return seconds / reps;
  }

 private:
  std::shared_ptr<kolo::DeviceBackend> backend_;
  int ordinal_;
  kolo::DeviceStream stream_ = nullptr;
  kolo::DeviceEvent start_ = nullptr;
  kolo::DeviceEvent end_ = nullptr;
};

}  // namespace bench
