// The C++ API: checks each call (engine/validation.h), turns it into a TensorEntry, and hands it to
// the running engine.
#include "kolo/kolo.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "api/call.h"
#include "api/runtime.h"
#include "api/start_op.h"
#include "common/clock.h"
#include "comm/mpi/mpi_fault.h"
#include "comm/mpi/mpi_runtime.h"
#include "common/ranks.h"
#include "engine/validation.h"
#if KOLO_HAVE_CUDA
#include "cuda/cuda_backend.h"
#endif

#ifndef KOLO_VERSION
#define KOLO_VERSION "0.0.0"
#endif

namespace kolo {
namespace {

Handle rejected(const Status& s) {
  ThreadCalls& tc = thread_calls();
  if (tc.refusal != nullptr) {
    *tc.refusal = s;
    return Handle();
  }
  return Handle(Runtime::instance().handles().create_done(s));
}

Status blocking(FunctionRef<Handle()> start, Output* output = nullptr) {
  Handle unused;
  return start_op(start, true, &unused, output);
}

// The request of `call` on `input`: assignments into memory *q already has.
void describe(const Call& call, const TensorView& input, Request* q) {
  q->name = call.site.name;
  q->rank = call.site.rank;
  q->kind = call.site.kind;
  q->dtype = input.dtype;
  q->device = input.device.type;
  q->shape = input.shape;
}

void describe_reduction(const ReduceOptions& o, Request* q) {
  q->reduce_op = o.op;
  q->prescale = o.prescale_factor;
  q->postscale = o.postscale_factor;
  q->compression = o.compression;
}

// Fills one of the engine's spare entries: assignments into memory it already has.
std::unique_ptr<TensorEntry> make_entry(const Call& call, const TensorView& input, const TensorView& output) {
  std::unique_ptr<TensorEntry> e = call.engine->new_entry();
  describe(call, input, &e->request);
  e->input = input;
  e->output = output;
  if (call.engine->stamps_submissions()) e->enqueued_at = steady_seconds();
  return e;
}

Handle submit(const Call& call, std::unique_ptr<TensorEntry> e, DoneCallback on_done) {
  if (e->input.device.type == DeviceType::kCUDA && call.device != nullptr) {
    // On the caller's thread, now: the collective starts on the device after what the caller has
    // queued so far on the tensor's stream, without the host waiting for it.
    Status s = call.device->record_ready(e->input, &e->ready_owner);
    if (!s.ok()) {
      return rejected(Status(s.code(), std::string(op_kind_name(call.site.kind)) + " of tensor '" + call.site.name +
                                           "' on rank " + std::to_string(call.site.rank) + ": " + s.message()));
    }
    e->ready_event = e->ready_owner.get();
  }
  ThreadCalls& tc = thread_calls();
  // An async op's waiter may drive it (HandleTable::wait); a blocking call's caller drives it anyway.
  std::weak_ptr<OpDriver> driver;
  if (!tc.blocking) driver = call.engine;
  e->handle = Runtime::instance().handles().create(std::move(on_done), call.site.name, std::move(driver));
  const Handle h(e->handle);
  // A refusal at the queue names the job's rank and the set.
  RankLabels labels(call.set_ranks, call.process_set ? "process set " + std::to_string(call.process_set) : "");
  const Status refused = call.engine->submit(std::move(e), tc.blocking);
  if (tc.blocking) tc.driven = call.engine;  // its drive() ends the quiet submit, refused or not
  if (refused.ok()) return h;
  if (tc.refusal != nullptr) {
    Runtime::instance().handles().discard(h.id());
    return rejected(refused);
  }
  Runtime::instance().handles().complete(h.id(), refused, Output());
  return h;
}

Handle submit_reduction(const Call& call, const TensorView& input, const TensorView& output, const ReduceOptions& o) {
  auto e = make_entry(call, input, output);
  describe_reduction(o, &e->request);
  return submit(call, std::move(e), o.on_done);
}

// A blocking allreduce: a small one of a CPU tensor through Engine::express where it takes it, else
// as every blocking call.
Status blocking_allreduce(const std::string& name, const TensorView& input, const TensorView& output,
                          const AllreduceOptions& o) {
  if (input.device.type != DeviceType::kCPU) return blocking([&] { return allreduce_async(name, input, output, o); });
  const CallScope scope;
  Call& call = *scope;
  Status s = begin(name, OpKind::kAllreduce, o.process_set, &call);
  if (s.ok()) s = validate_allreduce(call.site, input, output, o.op, o.prescale_factor, o.postscale_factor, o.compression);
  if (!s.ok()) return s;  // as a blocking call's refusal: no handle, no callback
  describe(call, input, &call.request);
  describe_reduction(o, &call.request);
  int64_t handle = 0;
  switch (call.engine->express(call.request, input, output, o.on_done, &s, &handle)) {
    case Engine::Express::kDone:
      return s;
    case Engine::Express::kQueued:
      call.engine->drive(handle);
      return Runtime::instance().handles().wait(handle, -1, nullptr);
    case Engine::Express::kNotTaken:
      break;
  }
  // The call begun and checked above, submitted as every blocking call's (an unnamed one counted once).
  return blocking([&] { return submit_reduction(call, input, output, o); });
}

}  // namespace

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
                       const AllreduceOptions& o) {
  const CallScope scope;
  Call& call = *scope;
  Status s = begin(name, OpKind::kAllreduce, o.process_set, &call);
  if (s.ok()) s = validate_allreduce(call.site, input, output, o.op, o.prescale_factor, o.postscale_factor, o.compression);
  if (!s.ok()) return rejected(s);
  return submit_reduction(call, input, output, o);
}

Handle allgather_async(const std::string& name, const TensorView& input, const SizedOutputOptions& o) {
  const CallScope scope;
  Call& call = *scope;
  Status s = begin(name, OpKind::kAllgather, o.process_set, &call);
  if (s.ok()) s = validate_allgather(call.site, input);
  if (!s.ok()) return rejected(s);
  auto e = make_entry(call, input, TensorView());
  e->allocate = o.allocate;
  return submit(call, std::move(e), o.on_done);
}

Handle broadcast_async(const std::string& name, const TensorView& input, const TensorView& output, int root_rank,
                       const BroadcastOptions& o) {
  const CallScope scope;
  Call& call = *scope;
  Status s = begin(name, OpKind::kBroadcast, o.process_set, &call);
  // The root is a job rank; the set's engine counts ranks within the set.
  int root = root_rank;
  if (s.ok() && !call.set_ranks.empty()) {
    auto it = std::find(call.set_ranks.begin(), call.set_ranks.end(), root_rank);
    if (it == call.set_ranks.end()) {
      s = Status::InvalidArgument("broadcast of tensor '" + call.site.name + "' on rank " +
                                  std::to_string(call.site.job_rank) + ": root rank " + std::to_string(root_rank) +
                                  " is not in process set " + std::to_string(o.process_set) + " (ranks " +
                                  format_ranks(call.set_ranks) + ")");
    } else {
      root = static_cast<int>(it - call.set_ranks.begin());
    }
  }
  if (s.ok()) s = validate_broadcast(call.site, input, output, root);
  if (!s.ok()) return rejected(s);
  auto e = make_entry(call, input, output);
  e->request.root = root;
  return submit(call, std::move(e), o.on_done);
}

Handle alltoall_async(const std::string& name, const TensorView& input, const std::vector<int64_t>& splits,
                      const SizedOutputOptions& o) {
  const CallScope scope;
  Call& call = *scope;
  std::vector<int64_t> resolved = splits;
  Status s = begin(name, OpKind::kAlltoall, o.process_set, &call);
  if (s.ok()) s = validate_alltoall(call.site, input, &resolved);
  if (!s.ok()) return rejected(s);
  auto e = make_entry(call, input, TensorView());
  e->splits = std::move(resolved);
  e->allocate = o.allocate;
  return submit(call, std::move(e), o.on_done);
}

Handle reducescatter_async(const std::string& name, const TensorView& input, const TensorView& output,
                           const ReducescatterOptions& o) {
  const CallScope scope;
  Call& call = *scope;
  Status s = begin(name, OpKind::kReducescatter, o.process_set, &call);
  if (s.ok()) {
    s = validate_reducescatter(call.site, input, output, o.op, o.prescale_factor, o.postscale_factor, o.compression);
  }
  if (!s.ok()) return rejected(s);
  return submit_reduction(call, input, output, o);
}

Handle barrier_async(const DoneCallback& on_done) { return barrier_async(0, on_done); }

Handle barrier_async(int process_set, const DoneCallback& on_done) {
  const CallScope scope;
  Call& call = *scope;
  // One name, not a per-process count: a rank in join() takes part in others' barriers without
  // calling barrier(), and must not fall behind in numbering. So one barrier at a time per rank.
  Status s = begin("barrier", OpKind::kBarrier, process_set, &call);
  if (!s.ok()) return rejected(s);
  TensorView none;
  none.dtype = DataType::kUInt8;
  return submit(call, make_entry(call, none, none), on_done);
}

Handle join_async(const DoneCallback& on_done) {
  const CallScope scope;
  Call& call = *scope;
  Status s = begin("join", OpKind::kJoin, 0, &call);
  if (!s.ok()) return rejected(s);
  TensorView none;
  none.dtype = DataType::kUInt8;
  return submit(call, make_entry(call, none, none), on_done);
}

Status wait(Handle handle, Output* output) { return Runtime::instance().handles().wait(handle.id(), -1, output); }

Status wait_for(Handle handle, double timeout_seconds, Output* output) {
  return Runtime::instance().handles().wait(handle.id(), timeout_seconds < 0 ? 0 : timeout_seconds, output);
}

Status wait_on_stream(Handle handle, void* stream, Output* output) {
  std::shared_ptr<void> done;
  Status s = Runtime::instance().handles().wait_launched(handle.id(), &done, output);
  if (!s.ok() || done == nullptr) return s;
  std::shared_ptr<DeviceBackend> backend = Runtime::instance().device_backend();
  return backend->wait(stream, done.get());
}

std::optional<Status> poll(Handle handle) { return Runtime::instance().handles().poll(handle.id()); }

Status start_op(FunctionRef<Handle()> start, bool block, Handle* handle, Output* output) {
  Status refusal;
  ThreadCalls& tc = thread_calls();
  tc.refusal = &refusal;
  tc.blocking = block;
  const Handle h = start();
  tc.blocking = false;
  tc.refusal = nullptr;  // before any cycle: a callback that the drive runs may start ops of its own
  const std::shared_ptr<Engine> engine = std::move(tc.driven);  // leaves it empty
  if (engine) engine->drive(h.id());
  if (!refusal.ok()) return refusal;
  if (!block) {
    *handle = h;
    return Status::OK();
  }
  return Runtime::instance().handles().wait(h.id(), -1, output);
}

Status allreduce(const std::string& name, const TensorView& input, const TensorView& output,
                 const AllreduceOptions& options) {
  return blocking_allreduce(name, input, output, options);
}

Status allgather(const std::string& name, const TensorView& input, Output* output, const SizedOutputOptions& options) {
  return blocking([&] { return allgather_async(name, input, options); }, output);
}

Status broadcast(const std::string& name, const TensorView& input, const TensorView& output, int root_rank,
                 const BroadcastOptions& options) {
  return blocking([&] { return broadcast_async(name, input, output, root_rank, options); });
}

Status alltoall(const std::string& name, const TensorView& input, const std::vector<int64_t>& splits, Output* output,
                const SizedOutputOptions& options) {
  return blocking([&] { return alltoall_async(name, input, splits, options); }, output);
}

Status reducescatter(const std::string& name, const TensorView& input, const TensorView& output,
                     const ReducescatterOptions& options) {
  return blocking([&] { return reducescatter_async(name, input, output, options); });
}

Status barrier() {
  return blocking([] { return barrier_async(); });
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
