// kolo._C's lifecycle: starting and ending kolo, recovering in place after a failure, and the timeline.
#include <pybind11/stl.h>

#include <map>
#include <string>
#include <vector>

#include "module_parts.h"

namespace kolo_py {

void register_lifecycle(py::module_& m) {
  m.def("init", [](const std::map<std::string, std::string>& settings) {
    std::vector<const char*> keys, values;
    for (const auto& kv : settings) {
      keys.push_back(kv.first.c_str());
      values.push_back(kv.second.c_str());
    }
    return status_without_gil(
        [&] { return kolo_init_with_settings(keys.data(), values.data(), static_cast<int32_t>(keys.size())); });
  });
  m.def("shutdown", [] {
    py::gil_scoped_release release;
    return kolo_shutdown();
  });
  m.def("recover_in_place", [] { return status_without_gil([] { return kolo_recover_in_place(); }); });
  m.def("in_place_recovery", [] { return kolo_in_place_recovery() != 0; });
  m.def("is_initialized", [] { return kolo_is_initialized() != 0; });
  m.def("start_timeline", [](const std::string& path, bool mark_cycles) {
    // Returns once kolo's thread has switched to the new file.
    return status_without_gil([&] { return kolo_start_timeline(path.c_str(), mark_cycles ? 1 : 0); });
  });
  m.def("stop_timeline", [] { return status_without_gil([] { return kolo_stop_timeline(); }); });
}

}  // namespace kolo_py
