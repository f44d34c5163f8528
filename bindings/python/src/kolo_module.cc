// kolo._C: the Python face of kolo's C ABI (include/kolo/c_api.h), and nothing more. Frameworks'
// tensors reach it as plain descriptors (pointer, dtype, shape, strides, device, stream), so this
// module needs no framework headers; kolo/torch turns torch tensors into descriptors.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "kolo/c_api.h"

namespace py = pybind11;

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
  return py::make_tuple(code, code == KOLO_OK ? std::string() : std::string(kolo_last_error()), output);
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "kolo's C ABI for Python (use kolo.torch, not this)";

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

  m.def("init", [](const std::map<std::string, std::string>& settings) {
    std::vector<const char*> keys, values;
    for (const auto& kv : settings) {
      keys.push_back(kv.first.c_str());
      values.push_back(kv.second.c_str());
    }
    int32_t code;
    {
      py::gil_scoped_release release;
      code = kolo_init_with_settings(keys.data(), values.data(), static_cast<int32_t>(keys.size()));
    }
    return py::make_tuple(code, code == KOLO_OK ? std::string() : std::string(kolo_last_error()));
  });
  m.def("shutdown", [] {
    py::gil_scoped_release release;
    return kolo_shutdown();
  });
  m.def("recover_in_place", [] {
    int32_t code;
    {
      py::gil_scoped_release release;
      code = kolo_recover_in_place();
    }
    return py::make_tuple(code, code == KOLO_OK ? std::string() : std::string(kolo_last_error()));
  });
  m.def("in_place_recovery", [] { return kolo_in_place_recovery() != 0; });
  m.def("is_initialized", [] { return kolo_is_initialized() != 0; });
  m.def("rank", &kolo_rank);
  m.def("size", &kolo_size);
  m.def("local_rank", &kolo_local_rank);
  m.def("local_size", &kolo_local_size);
  m.def("cross_rank", &kolo_cross_rank);
  m.def("cross_size", &kolo_cross_size);
  m.def("mpi_threads_supported", [] { return kolo_mpi_threads_supported() != 0; });
  m.def("is_homogeneous", [] { return kolo_is_homogeneous() != 0; });
  m.def("cuda_built", [] { return kolo_cuda_built() != 0; });
  m.def("nccl_built", &kolo_nccl_built);
  m.def("start_timeline", [](const std::string& path, bool mark_cycles) {
    int32_t code;
    {
      py::gil_scoped_release release;  // returns once kolo's thread has switched to the new file
      code = kolo_start_timeline(path.c_str(), mark_cycles ? 1 : 0);
    }
    return py::make_tuple(code, code == KOLO_OK ? std::string() : std::string(kolo_last_error()));
  });
  m.def("stop_timeline", [] {
    int32_t code;
    {
      py::gil_scoped_release release;
      code = kolo_stop_timeline();
    }
    return py::make_tuple(code, code == KOLO_OK ? std::string() : std::string(kolo_last_error()));
  });
  m.def("version", [] { return std::string(kolo_version()); });
  m.def("build_summary", [] { return std::string(kolo_build_summary()); });
  m.def("nccl_runtime", [] { return std::string(kolo_nccl_runtime()); });
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
    int32_t code;
    {
      py::gil_scoped_release release;
      code = kolo_allreduce_in_set(process_set, name.c_str(), &i.t, &o.t, op, prescale, postscale, compression);
    }
    return py::make_tuple(code, code == KOLO_OK ? std::string() : std::string(kolo_last_error()));
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

  // Process sets. Adding and removing are collective over the job: the GIL is released meanwhile.
  m.def("add_process_set", [](const std::vector<int32_t>& ranks) {
    int32_t id = -1, code;
    {
      py::gil_scoped_release release;
      code = kolo_add_process_set(ranks.data(), static_cast<int32_t>(ranks.size()), &id);
    }
    return py::make_tuple(code, code == KOLO_OK ? std::string() : std::string(kolo_last_error()), id);
  });
  m.def("remove_process_set", [](int32_t id) {
    int32_t code;
    {
      py::gil_scoped_release release;
      code = kolo_remove_process_set(id);
    }
    return py::make_tuple(code, code == KOLO_OK ? std::string() : std::string(kolo_last_error()));
  });
  // (code, message, ranks, this rank's place or -1)
  m.def("process_set_ranks", [](int32_t id) -> py::tuple {
    int32_t code = kolo_process_set_ranks(id, nullptr, 0);
    std::vector<int32_t> ranks;
    if (code == KOLO_OK) {
      ranks.resize(static_cast<size_t>(kolo_process_set_size(id)));
      code = kolo_process_set_ranks(id, ranks.data(), static_cast<int32_t>(ranks.size()));
    }
    if (code != KOLO_OK) return py::make_tuple(code, std::string(kolo_last_error()), std::vector<int32_t>(), -1);
    return py::make_tuple(code, std::string(), ranks, kolo_process_set_rank(id));
  });
  m.def("process_set_ids", [] {
    std::vector<int32_t> ids(static_cast<size_t>(kolo_process_set_ids(nullptr, 0)));
    kolo_process_set_ids(ids.data(), static_cast<int32_t>(ids.size()));
    return ids;
  });
  m.def("join_async", [] { return kolo_join_async(nullptr, nullptr); });

  m.def("poll", &kolo_poll);
  // Releases the GIL while waiting, so the framework's other threads (and kolo's callbacks) run.
  m.def("wait", [](kolo_handle handle, double timeout_seconds) {
    kolo_output* out = nullptr;
    int32_t code;
    {
      py::gil_scoped_release release;
      code = kolo_wait(handle, timeout_seconds, &out);
    }
    return finished(code, out);
  }, py::arg("handle"), py::arg("timeout_seconds") = -1.0);
  // GPU ops: waits only until kolo has launched the op, then makes `stream` (a cudaStream_t as an
  // integer) wait for it on the device; see kolo_wait_on_stream.
  m.def("wait_on_stream", [](kolo_handle handle, uintptr_t stream) {
    kolo_output* out = nullptr;
    int32_t code;
    {
      py::gil_scoped_release release;
      code = kolo_wait_on_stream(handle, reinterpret_cast<void*>(stream), &out);
    }
    return finished(code, out);
  });
}
