// kolo._C is registered in parts, one per area of kolo's C ABI (kolo_module.cc calls them in turn);
// this header declares them and the status helpers they share.
#ifndef KOLO_PYTHON_MODULE_PARTS_H_
#define KOLO_PYTHON_MODULE_PARTS_H_

#include <pybind11/pybind11.h>

#include <cstdint>
#include <string>

#include "kolo/c_api.h"

namespace kolo_py {

namespace py = pybind11;

void register_lifecycle(py::module_& m);     // init, shutdown, in-place recovery, timeline
void register_queries(py::module_& m);       // ranks and sizes, what kolo was built with
void register_collectives(py::module_& m);   // enqueueing the other ops
void register_process_sets(py::module_& m);  // adding, removing and listing process sets
void register_handles(py::module_& m);       // an op's Output, polling and waiting for it
void register_allreduce(py::module_& m);     // the one entry for an allreduce, past pybind11's dispatch
void register_store(py::module_& m);         // a job's key-value store served from this process

// Raises the exception and message kolo's Python gives a failed op (kolo._errors.error_for).
[[noreturn]] void raise_failed(int32_t code);

// A call's message as Python sees it: empty on success, else kolo's last error.
inline std::string error_message(int32_t code) {
  return code == KOLO_OK ? std::string() : std::string(kolo_last_error());
}

// Runs `call` (a C ABI call that may wait on other ranks) with the GIL released; returns
// (code, message).
template <typename Call>
py::tuple status_without_gil(Call&& call) {
  int32_t code;
  {
    py::gil_scoped_release release;
    code = call();
  }
  return py::make_tuple(code, error_message(code));
}

}  // namespace kolo_py

#endif  // KOLO_PYTHON_MODULE_PARTS_H_
