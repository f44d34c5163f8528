// The C ABI's ops: one entry point each, its options in a kolo_op_options, translated onto the C++ API.
// A call refused at once returns its status and makes no handle (start_op).
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "api/c_api_internal.h"
#include "api/start_op.h"
#include "kolo/c_api.h"

namespace {

// A C tensor as a view, assigned into *v's memory. Bad fields (negative ndim, NULL shape) become an
// invalid view that the C++ validation rejects with the tensor's name.
void fill_view(const kolo_tensor* t, kolo::TensorView* v) {
  v->shape.clear();
  v->strides.clear();
  v->device = kolo::Device();
  if (t == nullptr) {
    v->data = nullptr;
    v->dtype = static_cast<kolo::DataType>(-1);
    v->stream = nullptr;
    return;
  }
  v->data = t->data;
  v->dtype = static_cast<kolo::DataType>(t->dtype);
  if (t->ndim > 0 && t->shape != nullptr) {
    v->shape.assign(t->shape, t->shape + t->ndim);
    if (t->strides != nullptr) v->strides.assign(t->strides, t->strides + t->ndim);
  } else if (t->ndim < 0 || (t->ndim > 0 && t->shape == nullptr)) {
    v->shape.assign(1, -1);
  }
  v->device.type = static_cast<kolo::DeviceType>(t->device_type);
  v->device.index = t->device_index;
  v->stream = t->stream;
}

// A call's name and views, in memory its thread keeps: a small blocking op (a loss, a metric) allocates
// none. A call made inside another's callback gets its own.
struct CallArgs {
  std::string name;
  kolo::TensorView input, output;
  bool in_place = false;  // one tensor given as both: one view, checked once
  const kolo::TensorView& out() const { return in_place ? input : output; }
};

class ThisThreadsArgs {
 public:
  ThisThreadsArgs() : args_(busy_ ? &nested_ : &kept_), owner_(!busy_) { busy_ = true; }
  ~ThisThreadsArgs() {
    if (owner_) busy_ = false;
  }
  ThisThreadsArgs(const ThisThreadsArgs&) = delete;
  ThisThreadsArgs& operator=(const ThisThreadsArgs&) = delete;
  CallArgs& operator*() const { return *args_; }

 private:
  static thread_local CallArgs kept_;
  static thread_local bool busy_;
  CallArgs nested_;
  CallArgs* args_;
  bool owner_;
};
thread_local CallArgs ThisThreadsArgs::kept_;
thread_local bool ThisThreadsArgs::busy_ = false;

kolo::DoneCallback to_callback(const kolo_op_options& o) {
  if (o.done == nullptr) return {};
  return [done = o.done, data = o.done_data](const kolo::Status& s) {
    done(data, static_cast<int32_t>(s.code()), s.message().c_str());
  };
}

kolo::OutputAllocator to_allocator(const kolo_op_options& o) {
  if (o.allocate == nullptr) return {};
  return [allocate = o.allocate, data = o.allocate_data](const std::vector<int64_t>& shape, kolo::TensorView* out) {
    out->data = allocate(data, static_cast<int32_t>(shape.size()), shape.data());
    if (out->data == nullptr && out->size_bytes() > 0) return kolo::Status::Internal("the allocator returned NULL");
    return kolo::Status::OK();
  };
}

kolo::ReduceOptions reduce_options(const kolo_op_options& o, bool compression) {
  kolo::ReduceOptions r;
  r.op = static_cast<kolo::ReduceOp>(o.reduce_op);
  r.prescale_factor = o.prescale_factor;
  r.postscale_factor = o.postscale_factor;
  if (compression) r.compression = static_cast<kolo::Compression>(o.compression);
  r.on_done = to_callback(o);
  r.process_set = o.process_set;
  return r;
}

kolo::SizedOutputOptions sized_options(const kolo_op_options& o) {
  kolo::SizedOutputOptions s;
  s.allocate = to_allocator(o);
  s.on_done = to_callback(o);
  s.process_set = o.process_set;
  return s;
}

// The smallest struct_size taken: struct_size and process_set.
constexpr size_t kSmallestOptions = offsetof(kolo_op_options, name);

// The caller's options into *o: each field its struct holds whole (struct_size), the default for the
// rest (a struct from an older kolo.h).
kolo::Status read_options(const char* fn, const kolo_op_options* in, kolo_op_options* o) {
  kolo_op_options_init(o);
  if (in == nullptr) return kolo::Status::OK();
  const size_t size = in->struct_size;
  if (size < kSmallestOptions || size > sizeof(kolo_op_options)) {
    return kolo::Status::InvalidArgument(std::string(fn) + ": kolo_op_options.struct_size is " + std::to_string(size) +
                                         ", not a size this kolo takes (" + std::to_string(kSmallestOptions) + " to " +
                                         std::to_string(sizeof(kolo_op_options)) +
                                         "): set it with kolo_op_options_init");
  }
#define KOLO_TAKE(field) \
  if (size >= offsetof(kolo_op_options, field) + sizeof(in->field)) o->field = in->field
  KOLO_TAKE(process_set);
  KOLO_TAKE(name);
  KOLO_TAKE(blocking);
  KOLO_TAKE(reduce_op);
  KOLO_TAKE(prescale_factor);
  KOLO_TAKE(postscale_factor);
  KOLO_TAKE(compression);
  KOLO_TAKE(root_rank);
  KOLO_TAKE(splits);
  KOLO_TAKE(num_splits);
  KOLO_TAKE(allocate);
  KOLO_TAKE(allocate_data);
  KOLO_TAKE(done);
  KOLO_TAKE(done_data);
  KOLO_TAKE(output);
#undef KOLO_TAKE
  return kolo::Status::OK();
}

// Called before run() returns: a reference, not a std::function (which would allocate for a lambda
// capturing more than two pointers, once per op).
using Start = kolo::FunctionRef<kolo::Handle(const kolo_op_options&, const CallArgs&, kolo::Submission*)>;

// One op through the C ABI: its options, name and tensors read, then `start` (an op's start, start_op.h)
// enqueues it or is refused at once. Blocking: the caller drives the op's cycles (`drive`; join's wait only
// waits), a small allreduce may run to its end inside its start (Engine::express), and the op's output goes to
// options->output.
int32_t run(const char* fn, const kolo_op_options* given, const kolo_tensor* input, const kolo_tensor* output,
            kolo_handle* handle, bool drive, Start start) {
  if (handle != nullptr) *handle = 0;
  kolo_op_options o;
  kolo::Status s = read_options(fn, given, &o);
  const bool block = o.blocking != 0;
  if (s.ok() && !block && handle == nullptr) {
    s = kolo::Status::InvalidArgument(std::string(fn) + ": handle is NULL (an op not blocking gives its handle there)");
  }
  if (!s.ok()) return kolo_c::report(s);
  const ThisThreadsArgs scope;
  CallArgs& a = *scope;
  a.name.assign(o.name == nullptr ? "" : o.name);
  fill_view(input, &a.input);
  a.in_place = output == input;
  if (!a.in_place) fill_view(output, &a.output);
  kolo::Handle h;
  kolo::Output out;
  s = kolo::start_op([&](kolo::Submission* how) { return start(o, a, how); }, block && drive, &h, &out);
  if (!block) {
    if (s.ok()) *handle = h.id();
    return kolo_c::report(s);
  }
  if (s.ok() && !drive) s = kolo::wait(h, &out);
  return kolo_c::hand_over(s, std::move(out), o.output);
}

}  // namespace

extern "C" {

void kolo_op_options_init(kolo_op_options* options) {
  if (options == nullptr) return;
  *options = kolo_op_options{};
  options->struct_size = sizeof(kolo_op_options);
  options->reduce_op = KOLO_AVERAGE;
  options->prescale_factor = 1.0;
  options->postscale_factor = 1.0;
}

int32_t kolo_allreduce(const kolo_tensor* input, const kolo_tensor* output, const kolo_op_options* options,
                       kolo_handle* handle) {
  return run("kolo_allreduce", options, input, output, handle, true,
             [](const kolo_op_options& o, const CallArgs& a, kolo::Submission* how) {
               return kolo::start_allreduce(a.name, a.input, a.out(), reduce_options(o, true), how);
             });
}

int32_t kolo_allgather(const kolo_tensor* input, const kolo_op_options* options, kolo_handle* handle) {
  return run("kolo_allgather", options, input, nullptr, handle, true,
             [](const kolo_op_options& o, const CallArgs& a, kolo::Submission* how) {
               return kolo::start_allgather(a.name, a.input, sized_options(o), how);
             });
}

int32_t kolo_broadcast(const kolo_tensor* input, const kolo_tensor* output, const kolo_op_options* options,
                       kolo_handle* handle) {
  return run("kolo_broadcast", options, input, output, handle, true,
             [](const kolo_op_options& o, const CallArgs& a, kolo::Submission* how) {
               kolo::BroadcastOptions b;
               b.on_done = to_callback(o);
               b.process_set = o.process_set;
               return kolo::start_broadcast(a.name, a.input, a.out(), o.root_rank, b, how);
             });
}

int32_t kolo_alltoall(const kolo_tensor* input, const kolo_op_options* options, kolo_handle* handle) {
  return run("kolo_alltoall", options, input, nullptr, handle, true,
             [](const kolo_op_options& o, const CallArgs& a, kolo::Submission* how) {
               std::vector<int64_t> splits;
               if (o.splits != nullptr && o.num_splits > 0) splits.assign(o.splits, o.splits + o.num_splits);
               return kolo::start_alltoall(a.name, a.input, splits, sized_options(o), how);
             });
}

int32_t kolo_reducescatter(const kolo_tensor* input, const kolo_tensor* output, const kolo_op_options* options,
                           kolo_handle* handle) {
  return run("kolo_reducescatter", options, input, output, handle, true,
             [](const kolo_op_options& o, const CallArgs& a, kolo::Submission* how) {
               return kolo::start_reducescatter(a.name, a.input, a.out(), reduce_options(o, false), how);
             });
}

int32_t kolo_barrier(const kolo_op_options* options, kolo_handle* handle) {
  return run("kolo_barrier", options, nullptr, nullptr, handle, true,
             [](const kolo_op_options& o, const CallArgs&, kolo::Submission* how) {
               return kolo::start_barrier(o.process_set, to_callback(o), how);
             });
}

int32_t kolo_join(const kolo_op_options* options, kolo_handle* handle) {
  kolo_op_options o;
  if (read_options("kolo_join", options, &o).ok() && o.process_set != 0) {
    if (handle != nullptr) *handle = 0;
    return kolo_c::report(kolo::Status::InvalidArgument("kolo_join: a join is among every rank: process_set must be 0, not " +
                                                        std::to_string(o.process_set)));
  }
  return run("kolo_join", options, nullptr, nullptr, handle, false,
             [](const kolo_op_options& o, const CallArgs&, kolo::Submission* how) {
               return kolo::start_join(to_callback(o), how);
             });
}

}  // extern "C"
