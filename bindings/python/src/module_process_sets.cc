// kolo._C's process sets. Adding and removing are collective over the job: the GIL is released meanwhile.
#include <pybind11/stl.h>

#include <cstddef>
#include <string>
#include <vector>

#include "module_parts.h"

namespace kolo_py {

void register_process_sets(py::module_& m) {
  m.def("add_process_set", [](const std::vector<int32_t>& ranks) {
    int32_t id = -1, code;
    {
      py::gil_scoped_release release;
      code = kolo_add_process_set(ranks.data(), static_cast<int32_t>(ranks.size()), &id);
    }
    return py::make_tuple(code, error_message(code), id);
  });
  m.def("remove_process_set",
        [](int32_t id) { return status_without_gil([id] { return kolo_remove_process_set(id); }); });
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
}

}  // namespace kolo_py
