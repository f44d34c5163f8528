// kolo._C's collectives: enqueueing allreduce, allgather, broadcast, alltoall, reducescatter, barrier
// and join on tensors that Python describes.
#include <pybind11/stl.h>

#include <cstdint>
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

}  // namespace

void register_collectives(py::module_& m) {
  m.def("reducescatter_rows", &kolo_reducescatter_rows);

  // Enqueueing never blocks on other ranks; a call rejected at once returns a handle that has failed.
  // process_set: 0 is every rank; else an id from add_process_set.
  m.def("allreduce_async", [](const std::string& name, const Descriptor& in, const Descriptor& out, int32_t op,
                              double prescale, double postscale, int32_t compression, int32_t process_set) {
    CTensor i(in), o(out);
    return kolo_allreduce_in_set_async(process_set, name.c_str(), &i.t, &o.t, op, prescale, postscale, compression,
                                       nullptr, nullptr);
  }, py::arg("name"), py::arg("input"), py::arg("output"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
     py::arg("compression") = 0, py::arg("process_set") = 0);
  // Blocking (CPU tensors): the op's cycle may run on this thread (KOLO_CALLER_DRIVES), the GIL released.
  m.def("allreduce", [](const std::string& name, const Descriptor& in, const Descriptor& out, int32_t op,
                        double prescale, double postscale, int32_t compression, int32_t process_set) {
    CTensor i(in), o(out);
    return status_without_gil([&] {
      return kolo_allreduce_in_set(process_set, name.c_str(), &i.t, &o.t, op, prescale, postscale, compression);
    });
  }, py::arg("name"), py::arg("input"), py::arg("output"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
     py::arg("compression") = 0, py::arg("process_set") = 0);
  m.def("allgather_async", [](const std::string& name, const Descriptor& in, int32_t process_set) {
    CTensor i(in);
    return kolo_allgather_in_set_async(process_set, name.c_str(), &i.t, nullptr, nullptr, nullptr, nullptr);
  }, py::arg("name"), py::arg("input"), py::arg("process_set") = 0);
  m.def("broadcast_async", [](const std::string& name, const Descriptor& in, const Descriptor& out, int32_t root,
                              int32_t process_set) {
    CTensor i(in), o(out);
    return kolo_broadcast_in_set_async(process_set, name.c_str(), &i.t, &o.t, root, nullptr, nullptr);
  }, py::arg("name"), py::arg("input"), py::arg("output"), py::arg("root"), py::arg("process_set") = 0);
  m.def("alltoall_async", [](const std::string& name, const Descriptor& in, const std::vector<int64_t>& splits,
                             int32_t process_set) {
    CTensor i(in);
    return kolo_alltoall_in_set_async(process_set, name.c_str(), &i.t, splits.empty() ? nullptr : splits.data(),
                                      static_cast<int32_t>(splits.size()), nullptr, nullptr, nullptr, nullptr);
  }, py::arg("name"), py::arg("input"), py::arg("splits"), py::arg("process_set") = 0);
  m.def("reducescatter_async", [](const std::string& name, const Descriptor& in, const Descriptor& out, int32_t op,
                                  double prescale, double postscale, int32_t process_set) {
    CTensor i(in), o(out);
    return kolo_reducescatter_in_set_async(process_set, name.c_str(), &i.t, &o.t, op, prescale, postscale, nullptr,
                                           nullptr);
  }, py::arg("name"), py::arg("input"), py::arg("output"), py::arg("op"), py::arg("prescale"), py::arg("postscale"),
     py::arg("process_set") = 0);
  m.def("barrier_async", [](int32_t process_set) { return kolo_barrier_in_set_async(process_set, nullptr, nullptr); },
        py::arg("process_set") = 0);
  m.def("join_async", [] { return kolo_join_async(nullptr, nullptr); });
}

}  // namespace kolo_py
