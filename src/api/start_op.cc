// Starting an op (start_op.h): each call checked (engine/validation.h), turned into a TensorEntry and handed
// to its process set's engine, a refusal told the way the caller asked.
#include "api/start_op.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "api/call.h"
#include "api/runtime.h"
#include "common/clock.h"
#include "common/ranks.h"
#include "engine/validation.h"

namespace kolo {
namespace {

// A refusal at once: told to the caller that asked for it (start_op), else a handle already done with it.
Handle rejected(const Status& s, Submission* how) {
  if (how->tell_refusal) {
    how->refusal = s;
    return Handle();
  }
  return Handle(Runtime::instance().handles().create_done(s));
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

Handle submit(const Call& call, std::unique_ptr<TensorEntry> e, DoneCallback on_done, Submission* how) {
  if (e->input.device.type == DeviceType::kCUDA && call.device != nullptr) {
    // On the caller's thread, now: the collective starts on the device after what the caller has
    // queued so far on the tensor's stream, without the host waiting for it.
    Status s = call.device->record_ready(e->input, &e->ready_owner);
    if (!s.ok()) {
      return rejected(Status(s.code(), std::string(op_kind_name(call.site.kind)) + " of tensor '" + call.site.name +
                                           "' on rank " + std::to_string(call.site.rank) + ": " + s.message()),
                      how);
    }
    e->ready_event = e->ready_owner.get();
  }
  // An async op's waiter may drive it (kolo::wait); a blocking call's caller drives it anyway.
  std::weak_ptr<Engine> driver;
  if (!how->blocking) driver = call.engine;
  e->handle = Runtime::instance().handles().create(std::move(on_done), call.site.name, std::move(driver));
  const Handle h(e->handle);
  const Status refused = call.engine->submit(std::move(e), how->blocking);
  if (how->blocking) how->driven = call.engine;  // its drive() ends the quiet submit, refused or not
  if (refused.ok()) return h;
  if (how->tell_refusal) {
    Runtime::instance().handles().discard(h.id());
    return rejected(refused, how);
  }
  Runtime::instance().handles().complete(h.id(), refused, Output());
  return h;
}

Handle submit_reduction(const Call& call, const TensorView& input, const TensorView& output, const ReduceOptions& o,
                        Submission* how) {
  auto e = make_entry(call, input, output);
  describe_reduction(o, &e->request);
  return submit(call, std::move(e), o.on_done, how);
}

}  // namespace

Handle start_allreduce(const std::string& name, const TensorView& input, const TensorView& output,
                       const AllreduceOptions& o, Submission* how) {
  const CallScope scope;
  Call& call = *scope;
  Status s = begin(name, OpKind::kAllreduce, o.process_set, &call);
  if (s.ok()) s = validate_allreduce(call.site, input, output, o.op, o.prescale_factor, o.postscale_factor, o.compression);
  if (!s.ok()) return rejected(s, how);
  if (how->blocking && input.device.type == DeviceType::kCPU) {
    // A small one may run in the cycle it rides on, with no entry or handle unless that cycle leaves it in flight.
    describe(call, input, &call.request);
    describe_reduction(o, &call.request);
    int64_t handle = 0;
    switch (call.engine->express(call.request, input, output, o.on_done, &how->status, &handle)) {
      case Engine::Express::kDone:
        how->finished = true;
        return Handle();
      case Engine::Express::kQueued:
        how->driven = call.engine;  // in flight as if submitted quietly: the caller drives it and waits
        return Handle(handle);
      case Engine::Express::kNotTaken:
        break;
    }
  }
  return submit_reduction(call, input, output, o, how);
}

Handle start_allgather(const std::string& name, const TensorView& input, const SizedOutputOptions& o, Submission* how) {
  const CallScope scope;
  Call& call = *scope;
  Status s = begin(name, OpKind::kAllgather, o.process_set, &call);
  if (s.ok()) s = validate_allgather(call.site, input);
  if (!s.ok()) return rejected(s, how);
  auto e = make_entry(call, input, TensorView());
  e->allocate = o.allocate;
  return submit(call, std::move(e), o.on_done, how);
}

Handle start_broadcast(const std::string& name, const TensorView& input, const TensorView& output, int root_rank,
                       const BroadcastOptions& o, Submission* how) {
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
  if (!s.ok()) return rejected(s, how);
  auto e = make_entry(call, input, output);
  e->request.root = root;
  return submit(call, std::move(e), o.on_done, how);
}

Handle start_alltoall(const std::string& name, const TensorView& input, const std::vector<int64_t>& splits,
                      const SizedOutputOptions& o, Submission* how) {
  const CallScope scope;
  Call& call = *scope;
  std::vector<int64_t> resolved = splits;
  Status s = begin(name, OpKind::kAlltoall, o.process_set, &call);
  if (s.ok()) s = validate_alltoall(call.site, input, &resolved);
  if (!s.ok()) return rejected(s, how);
  auto e = make_entry(call, input, TensorView());
  e->splits = std::move(resolved);
  e->allocate = o.allocate;
  return submit(call, std::move(e), o.on_done, how);
}

Handle start_reducescatter(const std::string& name, const TensorView& input, const TensorView& output,
                           const ReducescatterOptions& o, Submission* how) {
  const CallScope scope;
  Call& call = *scope;
  Status s = begin(name, OpKind::kReducescatter, o.process_set, &call);
  if (s.ok()) {
    s = validate_reducescatter(call.site, input, output, o.op, o.prescale_factor, o.postscale_factor, o.compression);
  }
  if (!s.ok()) return rejected(s, how);
  return submit_reduction(call, input, output, o, how);
}

Handle start_barrier(int process_set, const DoneCallback& on_done, Submission* how) {
  const CallScope scope;
  Call& call = *scope;
  // One name, not a per-process count: a rank in join() takes part in others' barriers without
  // calling barrier(), and must not fall behind in numbering. So one barrier at a time per rank.
  Status s = begin("barrier", OpKind::kBarrier, process_set, &call);
  if (!s.ok()) return rejected(s, how);
  TensorView none;
  none.dtype = DataType::kUInt8;
  return submit(call, make_entry(call, none, none), on_done, how);
}

Handle start_join(const DoneCallback& on_done, Submission* how) {
  const CallScope scope;
  Call& call = *scope;
  Status s = begin("join", OpKind::kJoin, 0, &call);
  if (!s.ok()) return rejected(s, how);
  TensorView none;
  none.dtype = DataType::kUInt8;
  return submit(call, make_entry(call, none, none), on_done, how);
}

Status start_op(FunctionRef<Handle(Submission*)> start, bool blocking, Handle* handle, Output* output) {
  Submission how;
  how.blocking = blocking;
  how.tell_refusal = true;
  const Handle h = start(&how);
  if (how.finished) return how.status;
  if (how.driven) how.driven->drive(h.id());
  if (!how.refusal.ok()) return how.refusal;
  if (!blocking) {
    *handle = h;
    return Status::OK();
  }
  return Runtime::instance().handles().wait(h.id(), -1, output);
}

Status start_blocking(FunctionRef<Handle(Submission*)> start, Output* output) {
  Handle unused;
  return start_op(start, true, &unused, output);
}

}  // namespace kolo
