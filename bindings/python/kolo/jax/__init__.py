"""kolo for JAX: data-parallel training across processes and hosts.

    import kolo.jax as kolo
    kolo.init()
    params = kolo.broadcast_variables(params, root_rank=0)
    ...
    @jax.jit
    def train_step(params, batch):
        grads = jax.grad(loss)(params, batch)
        grads = kolo.allreduce(grads)          # averaged over ranks, inside the compiled step
        ...

Collectives take arrays or whole pytrees (one fused request per call) and work both inside
jax.jit (as XLA custom calls, on the buffers XLA owns) and on concrete arrays outside it.
"""
from kolo import _frameworks

_frameworks.require("jax")  # before anything imports jax: a clear error where it cannot

from kolo._core import (QUERIES, HorovodInternalError, KoloError, KoloValueError, ccl_built, cross_rank, cross_size,
                        cuda_built, ddl_built, gloo_built, gloo_enabled, init, is_homogeneous, is_initialized,
                        local_rank, local_size, mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, rank,
                        rocm_built, shutdown, size, start_timeline, stop_timeline)
from kolo.jax.collectives import (Adasum, Average, Max, Min, Product, Sum, allgather, allreduce, barrier, broadcast,
                                  broadcast_variables, reducescatter)

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank", "cross_size",
           "cross_rank", "mpi_threads_supported", "allreduce", "allgather", "broadcast", "broadcast_variables",
           "reducescatter", "barrier", "Sum", "Average", "Min", "Max", "Product", "Adasum", "KoloError",
           "KoloValueError"]
from kolo._mesh import Mesh, mesh
from kolo._process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set

from kolo.jax import elastic  # noqa: E402 (as Horovod's hvd.elastic in its other bindings)

__all__ += ["HorovodInternalError", "ProcessSet", "global_process_set", "add_process_set",
            "remove_process_set", "mesh", "Mesh", "elastic"] + list(QUERIES)
