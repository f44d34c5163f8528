// kolo._C: the Python face of kolo's C ABI (include/kolo/c_api.h), and nothing more. Frameworks'
// tensors reach it as plain descriptors (pointer, dtype, shape, strides, device, stream), so this
// module needs no framework headers; kolo/torch turns torch tensors into descriptors.
// Each area registers its own functions (module_parts.h).
#include <pybind11/pybind11.h>

#include "module_parts.h"

PYBIND11_MODULE(_C, m) {
  m.doc() = "kolo's C ABI for Python (use kolo.torch, not this)";
  kolo_py::register_handles(m);
  kolo_py::register_lifecycle(m);
  kolo_py::register_queries(m);
  kolo_py::register_collectives(m);
  kolo_py::register_allreduce(m);
  kolo_py::register_process_sets(m);
  kolo_py::register_store(m);
}
