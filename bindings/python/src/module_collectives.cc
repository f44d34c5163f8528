// kolo._C's collectives: enqueueing allgather, broadcast, alltoall, reducescatter, barrier and join on tensors
// that Python describes (allreduce: module_allreduce.cc).
#include <pybind11/stl.h>

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "module_parts.h"

namespace kolo_py {
namespace {

// A tensor as Python hands it over: (data_ptr, dtype, shape, strides, device_type, device_index, stream).
using Descriptor = std::tuple<uintptr_t, int32_t, std::vector<int64_t>, std::vector<int64_t>, int32_t, int32_t, uintptr_t>;

// Keeps the shape and stride arrays alive while kolo copies them.
struct CTensor {
  std::vector<int64_t> shape, strides;
  kolo_tensor t{};
  explicit CTensor(const Descriptor& d) {
    shape = std::get<2>(d);
    strides = std::get<3>(d);
    t.data = reinterpret_cast<void*>(std::get<0>(d));
    t.dtype = std::get<1>(d);
    t.ndim = static_cast<int32_t>(shape.size());
    t.shape = shape.data();
    t.strides = strides.empty() ? nullptr : strides.data();
    t.device_type = std::get<4>(d);
    t.device_index = std::get<5>(d);
    t.stream = reinterpret_cast<void*>(std::get<6>(d));
  }
};

// Where an allgather's result goes when the caller gave its memory; freed when the op ends.
struct GivenOutput {
  void* data;
  int64_t elements;
  static void* allocate(void* user, int32_t ndim, const int64_t* shape) {
    auto* given = static_cast<GivenOutput*>(user);
    int64_t elements = 1;
    for (int32_t d = 0; d < ndim; ++d) elements *= shape[d];
    return elements == given->elements ? given->data : nullptr;
  }
  static void done(void* user, int32_t, const char*) { delete static_cast<GivenOutput*>(user); }
};

// The C ABI's options for an op: its name (which must outlive them) and set, the rest at their defaults.
kolo_op_options options_for(const std::string& name, int32_t process_set) {
  kolo_op_options o;
  kolo_op_options_init(&o);
  o.name = name.c_str();
  o.process_set = process_set;
  return o;
}

kolo_op_options reduce_options(const std::string& name, int32_t op, double prescale, double postscale,
                               int32_t process_set) {
  kolo_op_options o = options_for(name, process_set);
  o.reduce_op = op;
  o.prescale_factor = prescale;
  o.postscale_factor = postscale;
  return o;
}

// The handle of an enqueued op; a call kolo refused at once raises here, as waiting for it would have.
// handle by reference: read after the entry point (an argument beside it) has written it.
kolo_handle started(int32_t code, const kolo_handle& handle) {
  if (code != KOLO_OK) raise_failed(code);
  return handle;
}

}  // namespace

// Raises the exception and message kolo's Python gives a failed op (kolo._errors.error_for).
[[noreturn]] void raise_failed(int32_t code) {
  const std::string message = kolo_last_error();
  py::object error = py::module_::import("kolo._errors").attr("error_for")(code, message);
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
  throw py::error_already_set();
}

void register_collectives(py::module_& m) {
  m.def("reducescatter_rows", &kolo_reducescatter_rows);

  // Enqueueing never blocks on other ranks; a call refused at once raises (started()). allreduce has its own
  // entry (module_allreduce.cc).
  // process_set: 0 is every rank; else an id from add_process_set.
  // output: memory the result goes into (a sharded optimizer's parameters, its own block the input),
  // instead of memory kolo allocates; the op fails if the ranks' rows do not fill it exactly.
  m.def("allgather_async", [](const std::string& name, const Descriptor& in, int32_t process_set,
                              const std::optional<Descriptor>& out) {
    CTensor i(in);
    kolo_op_options opts = options_for(name, process_set);
    GivenOutput* given = nullptr;
    if (out) {
      int64_t elements = 1;
      for (int64_t d : std::get<2>(*out)) elements *= d;
      given = new GivenOutput{reinterpret_cast<void*>(std::get<0>(*out)), elements};
      opts.allocate = GivenOutput::allocate;
      opts.allocate_data = given;
      opts.done = GivenOutput::done;
      opts.done_data = given;
    }
    kolo_handle h = 0;
    const int32_t code = kolo_allgather(&i.t, &opts, &h);
    if (code != KOLO_OK) delete given;  // refused at once: no done callback comes
    return started(code, h);
  }, py::arg("name"), py::arg("input"), py::arg("process_set") = 0, py::arg("output") = py::none());
  m.def("broadcast_async", [](const std::string& name, const Descriptor& in, const Descriptor& out, int32_t root,
                              int32_t process_set) {
    CTensor i(in), o(out);
    kolo_op_options opts = options_for(name, process_set);
    opts.root_rank = root;
    kolo_handle h = 0;
    return started(kolo_broadcast(&i.t, &o.t, &opts, &h), h);
  }, py::arg("name"), py::arg("input"), py::arg("output"), py::arg("root"), py::arg("process_set") = 0);
  m.def("alltoall_async", [](const std::string& name, const Descriptor& in, const std::vector<int64_t>& splits,
                             int32_t process_set) {
    CTensor i(in);
    kolo_op_options opts = options_for(name, process_set);
    opts.splits = splits.empty() ? nullptr : splits.data();
    opts.num_splits = static_cast<int32_t>(splits.size());
    kolo_handle h = 0;
    return started(kolo_alltoall(&i.t, &opts, &h), h);
  }, py::arg("name"), py::arg("input"), py::arg("splits"), py::arg("process_set") = 0);
  m.def("reducescatter_async", [](const std::string& name, const Descriptor& in, const Descriptor& out, int32_t op,
                                  double prescale, double postscale, int32_t process_set) {
    CTensor i(in), o(out);
    const kolo_op_options opts = reduce_options(name, op, prescale, postscale, process_set);
    kolo_handle h = 0;
    return started(kolo_reducescatter(&i.t, &o.t, &opts, &h), h);
  }, py::arg("name"), py::arg("input"), py::arg("output"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
     py::arg("process_set") = 0);
  m.def("barrier_async", [](int32_t process_set) {
    kolo_op_options opts;
    kolo_op_options_init(&opts);
    opts.process_set = process_set;
    kolo_handle h = 0;
    return started(kolo_barrier(&opts, &h), h);
  }, py::arg("process_set") = 0);
  m.def("join_async", [] {
    kolo_handle h = 0;
    return started(kolo_join(nullptr, &h), h);
  });
}

}  // namespace kolo_py
