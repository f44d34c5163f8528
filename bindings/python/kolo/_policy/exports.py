"""The names every binding exports, defined once. `from kolo._policy.exports import *` gives a binding
the shared ones (lifecycle, queries, process sets, reduce ops, errors, the mesh); it adds the ones it
supplies itself (PER_BINDING: its collectives, compression and object collectives) and its own."""
from kolo._errors import HorovodInternalError, KoloError, KoloValueError  # noqa: F401
from kolo._lifecycle import (cross_rank, cross_size, init, is_homogeneous, is_initialized, local_rank,  # noqa: F401
                             local_size, mpi_threads_supported, rank, shutdown, size)
from kolo._queries import (ccl_built, cuda_built, ddl_built, gloo_built, gloo_enabled, mpi_built,  # noqa: F401
                           mpi_enabled, nccl_built, rocm_built, start_timeline, stop_timeline)
from kolo._mesh import Mesh, mesh  # noqa: F401
from kolo._policy.scaling import Adasum, Average, Max, Min, Product, Sum  # noqa: F401
from kolo._process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set  # noqa: F401

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank", "cross_size",
          "cross_rank", "mpi_threads_supported", "is_homogeneous", "mpi_built", "mpi_enabled", "gloo_built",
          "gloo_enabled", "nccl_built", "cuda_built", "rocm_built", "ddl_built", "ccl_built", "start_timeline",
          "stop_timeline", "ProcessSet", "global_process_set", "add_process_set", "remove_process_set", "Sum",
          "Average", "Min", "Max", "Product", "Adasum", "KoloError", "KoloValueError", "HorovodInternalError",
          "Mesh", "mesh"]
PER_BINDING = ["allreduce", "allgather", "broadcast", "reducescatter", "Compression", "broadcast_object",
               "allgather_object", "elastic"]
# Lists spelled out, and the shared ones as __all__: the API reference reads them without running the code
# (griffe), and a binding's __all__ begins with this module's.
SHARED = __all__
COMMON = SHARED + PER_BINDING  # what every binding exports

