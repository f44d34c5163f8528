// The C++ API: lifecycle, queries, and each op's call, started through start_op.h (a default Submission for
// the *_async calls, start_op's blocking path for the blocking ones, a small allreduce's express way among it).
#include "kolo/kolo.h"

#include <memory>
#include <vector>

#include "api/runtime.h"
#include "api/start_op.h"
#include "comm/mpi/mpi_fault.h"
#include "comm/mpi/mpi_runtime.h"
#include "engine/engine.h"
#if KOLO_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

#ifndef KOLO_VERSION
#define KOLO_VERSION "0.0.0"
#endif

namespace kolo {

Status init(const Settings& overrides) { return Runtime::instance().init(overrides); }
Status shutdown() { return Runtime::instance().shutdown(); }
Status recover_in_place() { return Runtime::instance().recover_in_place(); }
bool in_place_recovery() { return Runtime::instance().in_place(); }
bool is_initialized() { return Runtime::instance().initialized(); }

#define KOLO_TOPOLOGY_GETTER(fn)                              \
  int fn() {                                                  \
    auto engine = Runtime::instance().engine();               \
    return engine ? engine->topology().fn : -1;               \
  }
KOLO_TOPOLOGY_GETTER(rank)
KOLO_TOPOLOGY_GETTER(size)
KOLO_TOPOLOGY_GETTER(local_rank)
KOLO_TOPOLOGY_GETTER(local_size)
KOLO_TOPOLOGY_GETTER(cross_rank)
KOLO_TOPOLOGY_GETTER(cross_size)
#undef KOLO_TOPOLOGY_GETTER

bool mpi_threads_supported() { return Runtime::instance().mpi_threads_supported(); }
std::string controller() { return Runtime::instance().controller(); }

bool is_homogeneous() {
  auto engine = Runtime::instance().engine();
  return engine && engine->topology().homogeneous;
}

Status start_timeline(const std::string& path, bool mark_cycles) {
  if (!Runtime::instance().initialized()) {
    return Status::NotInitialized("start_timeline: " + Runtime::instance().not_running_reason());
  }
  if (path.empty()) return Status::InvalidArgument("start_timeline: the file path is empty");
  return Runtime::instance().start_timeline(path, mark_cycles);
}

Status stop_timeline() {
  if (!Runtime::instance().initialized()) {
    return Status::NotInitialized("stop_timeline: " + Runtime::instance().not_running_reason());
  }
  return Runtime::instance().stop_timeline();
}

Handle allreduce_async(const std::string& name, const TensorView& input, const TensorView& output,
                       const AllreduceOptions& options) {
  Submission how;
  return start_allreduce(name, input, output, options, &how);
}

Handle allgather_async(const std::string& name, const TensorView& input, const SizedOutputOptions& options) {
  Submission how;
  return start_allgather(name, input, options, &how);
}

Handle broadcast_async(const std::string& name, const TensorView& input, const TensorView& output, int root_rank,
                       const BroadcastOptions& options) {
  Submission how;
  return start_broadcast(name, input, output, root_rank, options, &how);
}

Handle alltoall_async(const std::string& name, const TensorView& input, const std::vector<int64_t>& splits,
                      const SizedOutputOptions& options) {
  Submission how;
  return start_alltoall(name, input, splits, options, &how);
}

Handle reducescatter_async(const std::string& name, const TensorView& input, const TensorView& output,
                           const ReducescatterOptions& options) {
  Submission how;
  return start_reducescatter(name, input, output, options, &how);
}

Handle barrier_async(const DoneCallback& on_done) { return barrier_async(0, on_done); }

Handle barrier_async(int process_set, const DoneCallback& on_done) {
  Submission how;
  return start_barrier(process_set, on_done, &how);
}

Handle join_async(const DoneCallback& on_done) {
  Submission how;
  return start_join(on_done, &how);
}

namespace {

// An async op's waiter runs its cycles itself where its engine lets it, instead of two thread hand-offs
// (to kolo's thread and back); then it waits on the handle. A bounded wait() does not drive.
HandleTable& drive_before_wait(Handle handle, bool until_launched) {
  HandleTable& handles = Runtime::instance().handles();
  if (const std::shared_ptr<Engine> engine = handles.driver(handle.id())) {
    engine->drive_waited(handle.id(), until_launched);
  }
  return handles;
}

}  // namespace

Status wait(Handle handle, Output* output) { return drive_before_wait(handle, false).wait(handle.id(), -1, output); }

Status wait_for(Handle handle, double timeout_seconds, Output* output) {
  return Runtime::instance().handles().wait(handle.id(), timeout_seconds < 0 ? 0 : timeout_seconds, output);
}

Status wait_on_stream(Handle handle, void* stream, Output* output) {
  std::shared_ptr<void> done;
  Status s = drive_before_wait(handle, true).wait_launched(handle.id(), &done, output);
  if (!s.ok() || done == nullptr) return s;
  std::shared_ptr<DeviceBackend> backend = Runtime::instance().device_backend();
  return backend->wait(stream, done.get());
}

std::optional<Status> poll(Handle handle) { return Runtime::instance().handles().poll(handle.id()); }

Status allreduce(const std::string& name, const TensorView& input, const TensorView& output,
                 const AllreduceOptions& options) {
  return start_blocking([&](Submission* how) { return start_allreduce(name, input, output, options, how); }, nullptr);
}

Status allgather(const std::string& name, const TensorView& input, Output* output, const SizedOutputOptions& options) {
  return start_blocking([&](Submission* how) { return start_allgather(name, input, options, how); }, output);
}

Status broadcast(const std::string& name, const TensorView& input, const TensorView& output, int root_rank,
                 const BroadcastOptions& options) {
  return start_blocking(
      [&](Submission* how) { return start_broadcast(name, input, output, root_rank, options, how); }, nullptr);
}

Status alltoall(const std::string& name, const TensorView& input, const std::vector<int64_t>& splits, Output* output,
                const SizedOutputOptions& options) {
  return start_blocking([&](Submission* how) { return start_alltoall(name, input, splits, options, how); },
                        output);
}

Status reducescatter(const std::string& name, const TensorView& input, const TensorView& output,
                     const ReducescatterOptions& options) {
  return start_blocking(
      [&](Submission* how) { return start_reducescatter(name, input, output, options, how); }, nullptr);
}

Status barrier() {
  return start_blocking([](Submission* how) { return start_barrier(0, {}, how); }, nullptr);
}

Status join(int* last_joined_rank) {
  Output out;
  Status s = wait(join_async(), &out);
  if (last_joined_rank != nullptr) *last_joined_rank = out.last_joined_rank;
  return s;
}

Status add_process_set(const std::vector<int>& ranks, int* id) {
  int ignored = 0;
  return Runtime::instance().add_process_set(ranks, id != nullptr ? id : &ignored);
}

Status remove_process_set(int id) { return Runtime::instance().remove_process_set(id); }

Status process_set_ranks(int id, std::vector<int>* ranks, int* rank) {
  std::vector<int> members;
  int mine = -1;
  Status s = Runtime::instance().process_set(id, &members, &mine);
  if (s.ok() && ranks != nullptr) *ranks = std::move(members);
  if (s.ok() && rank != nullptr) *rank = mine;
  return s;
}

std::vector<int> process_set_ids() { return Runtime::instance().process_set_ids(); }

BuildInfo build_info() {
  BuildInfo info;
  info.version = KOLO_VERSION;
  info.mpi_version = mpi_library_version();
  info.mpi_ulfm = ulfm_built();
#if KOLO_HAVE_GLOO
  info.gloo = true;
  info.gloo_version = KOLO_GLOO_VERSION;
#endif
#if KOLO_HAVE_CUDA
  info.cuda = true;
  info.cuda_version = cuda_build_version();
  info.nccl = true;
  info.nccl_version = nccl_build_version();
  info.gpus = gpus_seen();
#endif
  return info;
}

}  // namespace kolo
