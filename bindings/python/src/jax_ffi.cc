// kolo.jax's XLA FFI handlers: allreduce, allgather, broadcast and reducescatter of a group of buffers, as custom
// calls inside compiled JAX programs. XLA hands over the buffers it owns; each is enqueued into
// kolo's engine under its own name (so a pytree's leaves are negotiated and fused together).
// On the CPU the handler returns once all are done. On a GPU (the *_cuda handlers) kolo's work
// starts after what XLA has queued on its stream, and the handler returns once kolo has launched
// it, with XLA's stream waiting for it on the device (kolo_wait_on_stream): the host never waits
// for the collective. Compiled without CUDA headers: streams are opaque pointers.
//
// Loaded with ctypes (kolo/jax/_ffi.py), which wraps each symbol in a PyCapsule for
// jax.ffi.register_ffi_target. Uses only kolo's C ABI.
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kolo/c_api.h"
#include "xla/ffi/api/ffi.h"

namespace ffi = xla::ffi;

namespace {

// XLA's element types that kolo reduces, as kolo's dtype codes; -1 for the rest.
int32_t kolo_dtype_of(ffi::DataType t) {
  switch (t) {
    case ffi::DataType::U8: return KOLO_UINT8;
    case ffi::DataType::S8: return KOLO_INT8;
    case ffi::DataType::U16: return KOLO_UINT16;
    case ffi::DataType::S16: return KOLO_INT16;
    case ffi::DataType::PRED: return KOLO_BOOL;
    case ffi::DataType::S32: return KOLO_INT32;
    case ffi::DataType::S64: return KOLO_INT64;
    case ffi::DataType::F16: return KOLO_FLOAT16;
    case ffi::DataType::BF16: return KOLO_BFLOAT16;
    case ffi::DataType::F32: return KOLO_FLOAT32;
    case ffi::DataType::F64: return KOLO_FLOAT64;
    default: return -1;
  }
}

// Where a call's buffers are: the host, or a GPU with XLA's stream for it.
struct Place {
  int32_t device_type = KOLO_CPU;
  int32_t ordinal = 0;
  void* stream = nullptr;
};

// A buffer as kolo sees it; holds the shape kolo reads while enqueueing.
struct View {
  std::vector<int64_t> shape;
  kolo_tensor t{};
  View(const ffi::AnyBuffer& b, int32_t dtype, const Place& place) {
    auto dims = b.dimensions();
    shape.assign(dims.begin(), dims.end());
    t.data = b.untyped_data();
    t.dtype = dtype;
    t.ndim = static_cast<int32_t>(shape.size());
    t.shape = shape.data();
    t.strides = nullptr;  // XLA's default layout is dense, row-major
    t.device_type = place.device_type;
    t.device_index = place.ordinal;
    t.stream = place.stream;
  }
};

// The group's names arrive as one attribute, one name per line (Python builds them from the
// pytree's paths, so errors name the leaf).
std::vector<std::string> split_names(std::string_view joined, size_t count) {
  std::vector<std::string> names;
  size_t start = 0;
  while (names.size() < count && start <= joined.size()) {
    size_t end = joined.find('\n', start);
    if (end == std::string_view::npos) end = joined.size();
    names.emplace_back(joined.substr(start, end - start));
    start = end + 1;
  }
  return names;
}

// Checks the call's shape: as many results as arguments, names for all, supported dtypes.
ffi::Error check_group(const ffi::RemainingArgs& args, const ffi::RemainingRets& rets,
                       const std::vector<std::string>& names, std::vector<int32_t>* dtypes) {
  if (args.size() != rets.size() || names.size() != args.size()) {
    return ffi::Error::InvalidArgument("kolo: " + std::to_string(args.size()) + " inputs, " +
                                       std::to_string(rets.size()) + " outputs and " +
                                       std::to_string(names.size()) + " names do not match");
  }
  for (size_t i = 0; i < args.size(); ++i) {
    auto in = args.get<ffi::AnyBuffer>(i);
    if (!in.has_value()) return in.error();
    int32_t dtype = kolo_dtype_of(in->element_type());
    if (dtype < 0) {
      return ffi::Error::InvalidArgument("kolo: tensor '" + names[i] + "' on rank " + std::to_string(kolo_rank()) +
                                         ": XLA element type " +
                                         std::to_string(static_cast<int>(in->element_type())) +
                                         " is not one kolo reduces");
    }
    dtypes->push_back(dtype);
  }
  return ffi::Error::Success();
}

// kolo's status as XLA's, so that Python can tell a call wrong in itself from a failed op.
ffi::ErrorCode xla_code_of(int32_t code) {
  switch (code) {
    case KOLO_INVALID_ARGUMENT: return ffi::ErrorCode::kInvalidArgument;
    case KOLO_MISMATCH: return ffi::ErrorCode::kFailedPrecondition;
    case KOLO_ABORTED: return ffi::ErrorCode::kAborted;
    case KOLO_UNSUPPORTED: return ffi::ErrorCode::kUnimplemented;
    case KOLO_TIMEOUT: return ffi::ErrorCode::kDeadlineExceeded;
    case KOLO_PEERS_FAILED: return ffi::ErrorCode::kUnavailable;
    case KOLO_NOT_INITIALIZED: return ffi::ErrorCode::kFailedPrecondition;
    default: return ffi::ErrorCode::kInternal;
  }
}

// An op as its entry point left it: enqueued (its handle), or refused at once (its status, no handle).
struct Started {
  kolo_handle handle = 0;
  int32_t code = KOLO_OK;
  std::string message;
};

// handle by reference: read after the entry point (an argument beside it) has written it.
Started started(int32_t code, const kolo_handle& handle) {
  return Started{handle, code, code == KOLO_OK ? std::string() : std::string(kolo_last_error())};
}

// The C ABI's options for an op named `name` in process set `set`, the rest at their defaults.
kolo_op_options options_for(const char* name, int32_t set) {
  kolo_op_options o;
  kolo_op_options_init(&o);
  o.name = name;
  o.process_set = set;
  return o;
}

// Waits for every op enqueued (even after a failure, so none is left behind); the first failure, a
// refusal's included, wins. On a GPU only until kolo has launched the work, XLA's stream then waiting
// for it on the device. Messages start with "kolo: " so that kolo.jax recognizes them inside XLA's error.
ffi::Error wait_all(const std::vector<Started>& ops, const Place& place) {
  int32_t first = KOLO_OK;
  std::string message;
  for (const Started& op : ops) {
    int32_t code = op.code;
    std::string why = op.message;
    if (code == KOLO_OK) {
      code = place.device_type == KOLO_CUDA ? kolo_wait_on_stream(op.handle, place.stream, nullptr)
                                            : kolo_wait(op.handle, -1.0, nullptr);
      if (code != KOLO_OK) why = kolo_last_error();
    }
    if (code != KOLO_OK && first == KOLO_OK) {
      first = code;
      message = why;
    }
  }
  if (first == KOLO_OK) return ffi::Error::Success();
  return ffi::Error(xla_code_of(first), "kolo: " + message);
}

// Enqueues one op per (argument, result) pair, `enqueue(name, input, output)` (a Started), then waits
// for all.
template <typename Enqueue>
ffi::Error run_group(std::string_view names_attr, const ffi::RemainingArgs& args, const ffi::RemainingRets& rets,
                     const Place& place, Enqueue enqueue) {
  auto names = split_names(names_attr, args.size());
  std::vector<int32_t> dtypes;
  if (auto e = check_group(args, rets, names, &dtypes); e.failure()) return e;
  std::vector<Started> ops;
  for (size_t i = 0; i < args.size(); ++i) {
    View in(*args.get<ffi::AnyBuffer>(i), dtypes[i], place);
    View out(**rets.get<ffi::AnyBuffer>(i), dtypes[i], place);
    ops.push_back(enqueue(names[i].c_str(), &in.t, &out.t));
  }
  return wait_all(ops, place);
}

kolo_op_options reduce_options(const char* name, int32_t set, int32_t op, double prescale, double postscale) {
  kolo_op_options o = options_for(name, set);
  o.reduce_op = op;
  o.prescale_factor = prescale;
  o.postscale_factor = postscale;
  return o;
}

// `set`: the process set the op runs in (0: every rank).
ffi::Error allreduce_at(const Place& place, std::string_view names, int32_t op, double prescale, double postscale,
                        int32_t set, ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return run_group(names, args, rets, place, [&](const char* name, const kolo_tensor* in, const kolo_tensor* out) {
    kolo_op_options o = reduce_options(name, set, op, prescale, postscale);
    kolo_handle h = 0;
    return started(kolo_allreduce(in, out, &o, &h), h);
  });
}

ffi::Error broadcast_at(const Place& place, std::string_view names, int32_t root_rank, int32_t set,
                        ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return run_group(names, args, rets, place, [&](const char* name, const kolo_tensor* in, const kolo_tensor* out) {
    kolo_op_options o = options_for(name, set);
    o.root_rank = root_rank;
    kolo_handle h = 0;
    return started(kolo_broadcast(in, out, &o, &h), h);
  });
}

// XLA allocated each result with this rank's rows of the scattered sum (kolo_reducescatter_rows).
ffi::Error reducescatter_at(const Place& place, std::string_view names, int32_t op, double prescale, double postscale,
                            int32_t set, ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return run_group(names, args, rets, place, [&](const char* name, const kolo_tensor* in, const kolo_tensor* out) {
    kolo_op_options o = reduce_options(name, set, op, prescale, postscale);
    kolo_handle h = 0;
    return started(kolo_reducescatter(in, out, &o, &h), h);
  });
}

// XLA allocated the allgather's result when the program was traced: every rank's rows times the
// rank count. kolo's allocation request is answered with that buffer when the shapes agree.
struct GatherTarget {
  ffi::AnyBuffer out;
};

void* gather_into(void* user_data, int32_t ndim, const int64_t* shape) {
  auto* target = static_cast<GatherTarget*>(user_data);
  auto dims = target->out.dimensions();
  bool same = static_cast<size_t>(ndim) == dims.size();
  for (int32_t d = 0; same && d < ndim; ++d) same = shape[d] == dims[d];
  return same ? target->out.untyped_data() : nullptr;
}

// Inside jit every rank must gather the same rows. Each rank's row counts travel alongside the
// data (negotiated in the same round), so that on a difference every rank fails with the same
// message, including a rank whose own buffer happened to fit the total.
ffi::Error check_equal_rows(const std::vector<std::string>& names, const std::vector<int64_t>& rows, int32_t set,
                            const Started& gathered) {
  if (gathered.code != KOLO_OK) return ffi::Error(xla_code_of(gathered.code), "kolo: " + gathered.message);
  kolo_output* out = nullptr;
  const int32_t code = kolo_wait(gathered.handle, -1.0, &out);
  if (code != KOLO_OK) return ffi::Error(xla_code_of(code), "kolo: " + std::string(kolo_last_error()));
  const auto* all = static_cast<const int64_t*>(kolo_output_data(out));
  std::vector<int32_t> members(static_cast<size_t>(std::max(kolo_process_set_size(set), 0)));
  kolo_process_set_ranks(set, members.data(), static_cast<int32_t>(members.size()));
  const int ranks = static_cast<int>(members.size());
  std::string message;
  for (size_t i = 0; i < rows.size() && message.empty(); ++i) {
    bool equal = true;
    for (int r = 1; r < ranks; ++r) equal = equal && all[r * rows.size() + i] == all[i];
    if (equal) continue;
    message = "allgather of tensor '" + names[i] + "' inside jit: the ranks gave different first dimensions (";
    for (int r = 0; r < ranks; ++r) {
      message += (r ? ", " : "") + std::to_string(all[r * rows.size() + i]) + " on rank " + std::to_string(members[r]);
    }
    message += "); inside jit every rank must give the same shape (outside jit they may differ)";
  }
  kolo_output_free(out);
  if (message.empty()) return ffi::Error::Success();
  return ffi::Error(ffi::ErrorCode::kInvalidArgument, "kolo: " + message);
}

ffi::Error allgather_at(const Place& place, std::string_view names_attr, int32_t check_rows, int32_t set,
                        ffi::RemainingArgs args, ffi::RemainingRets rets) {
  auto names = split_names(names_attr, args.size());
  std::vector<int32_t> dtypes;
  if (auto e = check_group(args, rets, names, &dtypes); e.failure()) return e;
  std::vector<GatherTarget> targets;
  std::vector<int64_t> rows;
  for (size_t i = 0; i < args.size(); ++i) {
    targets.push_back({**rets.get<ffi::AnyBuffer>(i)});
    auto dims = args.get<ffi::AnyBuffer>(i)->dimensions();
    rows.push_back(dims.size() == 0 ? 0 : dims[0]);
  }
  Started rows_op;
  if (check_rows != 0) {
    const int64_t count = static_cast<int64_t>(rows.size());
    kolo_tensor t{rows.data(), KOLO_INT64, 1, &count, nullptr, KOLO_CPU, 0, nullptr};
    const std::string rows_name = names[0] + ".rows";
    const kolo_op_options o = options_for(rows_name.c_str(), set);
    kolo_handle h = 0;
    const int32_t code = kolo_allgather(&t, &o, &h);
    rows_op = started(code, h);
  }
  std::vector<Started> ops;
  for (size_t i = 0; i < args.size(); ++i) {
    View in(*args.get<ffi::AnyBuffer>(i), dtypes[i], place);
    kolo_op_options o = options_for(names[i].c_str(), set);
    o.allocate = gather_into;
    o.allocate_data = &targets[i];
    kolo_handle h = 0;
    ops.push_back(started(kolo_allgather(&in.t, &o, &h), h));
  }
  ffi::Error rows_result = check_rows != 0 ? check_equal_rows(names, rows, set, rows_op) : ffi::Error::Success();
  ffi::Error result = wait_all(ops, place);
  return rows_result.failure() ? std::move(rows_result) : std::move(result);
}

// The handlers XLA calls: on the CPU, and on a GPU with XLA's stream and device.
Place on_gpu(void* stream, int32_t ordinal) { return Place{KOLO_CUDA, ordinal, stream}; }

ffi::Error allreduce_impl(std::string_view names, int32_t op, double prescale, double postscale, int32_t set,
                          ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return allreduce_at(Place{}, names, op, prescale, postscale, set, args, rets);
}
ffi::Error allreduce_cuda_impl(void* stream, int32_t ordinal, std::string_view names, int32_t op, double prescale,
                               double postscale, int32_t set, ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return allreduce_at(on_gpu(stream, ordinal), names, op, prescale, postscale, set, args, rets);
}
ffi::Error broadcast_impl(std::string_view names, int32_t root_rank, int32_t set, ffi::RemainingArgs args,
                          ffi::RemainingRets rets) {
  return broadcast_at(Place{}, names, root_rank, set, args, rets);
}
ffi::Error broadcast_cuda_impl(void* stream, int32_t ordinal, std::string_view names, int32_t root_rank, int32_t set,
                               ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return broadcast_at(on_gpu(stream, ordinal), names, root_rank, set, args, rets);
}
ffi::Error allgather_impl(std::string_view names, int32_t check_rows, int32_t set, ffi::RemainingArgs args,
                          ffi::RemainingRets rets) {
  return allgather_at(Place{}, names, check_rows, set, args, rets);
}
ffi::Error allgather_cuda_impl(void* stream, int32_t ordinal, std::string_view names, int32_t check_rows, int32_t set,
                               ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return allgather_at(on_gpu(stream, ordinal), names, check_rows, set, args, rets);
}

ffi::Error reducescatter_impl(std::string_view names, int32_t op, double prescale, double postscale, int32_t set,
                              ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return reducescatter_at(Place{}, names, op, prescale, postscale, set, args, rets);
}
ffi::Error reducescatter_cuda_impl(void* stream, int32_t ordinal, std::string_view names, int32_t op, double prescale,
                                   double postscale, int32_t set, ffi::RemainingArgs args, ffi::RemainingRets rets) {
  return reducescatter_at(on_gpu(stream, ordinal), names, op, prescale, postscale, set, args, rets);
}

}  // namespace

// Each handler's attributes, behind the context XLA passes: nothing on the CPU; on a GPU its stream
// and the device's ordinal.
namespace {

ffi::Binding<ffi::ExecutionStage::kExecute> on_cpu() { return ffi::Ffi::Bind(); }
auto on_cuda() { return ffi::Ffi::Bind().Ctx<ffi::PlatformStream<void*>>().Ctx<ffi::DeviceOrdinal>(); }

// allreduce and reducescatter: names, op and the two factors.
template <typename B>
auto allreduce_attrs(B b) {
  return std::move(b).template Attr<std::string_view>("names")
      .template Attr<int32_t>("op")
      .template Attr<double>("prescale")
      .template Attr<double>("postscale")
      .template Attr<int32_t>("process_set")
      .RemainingArgs()
      .RemainingRets();
}

template <typename B>
auto broadcast_attrs(B b) {
  return std::move(b)
      .template Attr<std::string_view>("names")
      .template Attr<int32_t>("root_rank")
      .template Attr<int32_t>("process_set")
      .RemainingArgs()
      .RemainingRets();
}

template <typename B>
auto allgather_attrs(B b) {
  return std::move(b)
      .template Attr<std::string_view>("names")
      .template Attr<int32_t>("check_rows")
      .template Attr<int32_t>("process_set")
      .RemainingArgs()
      .RemainingRets();
}

}  // namespace

XLA_FFI_DEFINE_HANDLER_SYMBOL(kolo_jax_allreduce, allreduce_impl, allreduce_attrs(on_cpu()));
XLA_FFI_DEFINE_HANDLER_SYMBOL(kolo_jax_broadcast, broadcast_impl, broadcast_attrs(on_cpu()));
XLA_FFI_DEFINE_HANDLER_SYMBOL(kolo_jax_allgather, allgather_impl, allgather_attrs(on_cpu()));
XLA_FFI_DEFINE_HANDLER_SYMBOL(kolo_jax_allreduce_cuda, allreduce_cuda_impl, allreduce_attrs(on_cuda()));
XLA_FFI_DEFINE_HANDLER_SYMBOL(kolo_jax_broadcast_cuda, broadcast_cuda_impl, broadcast_attrs(on_cuda()));
XLA_FFI_DEFINE_HANDLER_SYMBOL(kolo_jax_allgather_cuda, allgather_cuda_impl, allgather_attrs(on_cuda()));
XLA_FFI_DEFINE_HANDLER_SYMBOL(kolo_jax_reducescatter, reducescatter_impl, allreduce_attrs(on_cpu()));
XLA_FFI_DEFINE_HANDLER_SYMBOL(kolo_jax_reducescatter_cuda, reducescatter_cuda_impl, allreduce_attrs(on_cuda()));
