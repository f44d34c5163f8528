// kolo._C's op handles: what an op produced (Output), polling it and waiting for it.
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <vector>

#include "module_parts.h"

namespace kolo_py {
namespace {

// What an op produced beyond its status; owns memory kolo allocated and exposes it as a writable
// byte buffer, so a framework can wrap it without a copy (the tensor keeps this object alive).
class Output {
 public:
  explicit Output(kolo_output* o) : o_(o) {}
  ~Output() { kolo_output_free(o_); }
  Output(const Output&) = delete;
  Output& operator=(const Output&) = delete;

  std::vector<int64_t> shape() const {
    const int64_t* s = kolo_output_shape(o_);
    return std::vector<int64_t>(s, s + kolo_output_ndim(o_));
  }
  std::vector<int64_t> received_splits() const {
    const int64_t* s = kolo_output_received_splits(o_);
    return std::vector<int64_t>(s, s + kolo_output_num_received_splits(o_));
  }
  int last_joined_rank() const { return kolo_output_last_joined_rank(o_); }
  int64_t size_bytes() const { return kolo_output_size_bytes(o_); }
  void* data() const { return kolo_output_data(o_); }

 private:
  kolo_output* o_;
};

// The status of a finished op as Python sees it: (code, message, output or None).
py::tuple finished(int32_t code, kolo_output* out) {
  py::object output = py::none();
  if (out != nullptr) output = py::cast(new Output(out), py::return_value_policy::take_ownership);
  return py::make_tuple(code, error_message(code), output);
}

// Runs `wait(&output)` (kolo_wait or kolo_wait_on_stream) with the GIL released, so the framework's
// other threads (and kolo's callbacks) run meanwhile; then finished().
template <typename Wait>
py::tuple finished_without_gil(Wait&& wait) {
  kolo_output* out = nullptr;
  int32_t code;
  {
    py::gil_scoped_release release;
    code = wait(&out);
  }
  return finished(code, out);
}

void register_output(py::module_& m) {
  py::class_<Output>(m, "Output", py::buffer_protocol())
      .def_property_readonly("shape", &Output::shape)
      .def_property_readonly("received_splits", &Output::received_splits)
      .def_property_readonly("last_joined_rank", &Output::last_joined_rank)
      .def_property_readonly("size_bytes", &Output::size_bytes)
      .def_property_readonly("address", [](const Output& o) { return reinterpret_cast<uintptr_t>(o.data()); })
      // For memory kolo allocated on a GPU: CUDA's array interface, so that a framework wraps it
      // without a copy (torch.as_tensor(output, device="cuda:N")). The op has ended, or the
      // framework's stream waits for it (wait_on_stream): no stream to synchronize with.
      .def_property_readonly("__cuda_array_interface__",
                             [](const Output& o) {
                               py::dict d;
                               d["shape"] = py::make_tuple(o.size_bytes());
                               d["typestr"] = "|u1";
                               d["data"] = py::make_tuple(reinterpret_cast<uintptr_t>(o.data()), false);
                               d["version"] = 3;
                               d["strides"] = py::none();
                               d["stream"] = py::none();
                               return d;
                             })
      .def_buffer([](Output& o) -> py::buffer_info {
        // The bytes, whatever the dtype: the framework reinterprets them.
        return py::buffer_info(o.data(), 1, py::format_descriptor<uint8_t>::format(), 1,
                               {static_cast<py::ssize_t>(o.size_bytes())}, {static_cast<py::ssize_t>(1)}, false);
      });
}

}  // namespace

void register_handles(py::module_& m) {
  register_output(m);
  m.def("poll", &kolo_poll);
  m.def("wait", [](kolo_handle handle, double timeout_seconds) {
    return finished_without_gil([&](kolo_output** out) { return kolo_wait(handle, timeout_seconds, out); });
  }, py::arg("handle"), py::arg("timeout_seconds") = -1.0);
  // GPU ops: waits only until kolo has launched the op, then makes `stream` (a cudaStream_t as an
  // integer) wait for it on the device; see kolo_wait_on_stream.
  m.def("wait_on_stream", [](kolo_handle handle, uintptr_t stream) {
    return finished_without_gil(
        [&](kolo_output** out) { return kolo_wait_on_stream(handle, reinterpret_cast<void*>(stream), out); });
  });
}

}  // namespace kolo_py
