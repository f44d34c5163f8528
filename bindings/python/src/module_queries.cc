// kolo._C's queries: this rank's place in the job, and what kolo was built with.
#include <string>

#include "module_parts.h"

namespace kolo_py {

void register_queries(py::module_& m) {
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
  m.def("gloo_built", &kolo_gloo_built);
  m.def("controller", &kolo_controller);
  m.def("version", [] { return std::string(kolo_version()); });
  m.def("build_summary", [] { return std::string(kolo_build_summary()); });
  m.def("nccl_runtime", [] { return std::string(kolo_nccl_runtime()); });
}

}  // namespace kolo_py
