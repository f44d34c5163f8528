"""kolo for PyTorch, with Horovod's names: ``import kolo.torch as hvd`` ports a Horovod script.

    import kolo.torch as kolo
    kolo.init()
    sampler = DistributedSampler(dataset, num_replicas=kolo.size(), rank=kolo.rank())
    kolo.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = kolo.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    kolo.broadcast_optimizer_state(optimizer, root_rank=0)
"""
from kolo import _frameworks

_frameworks.require("torch")  # before anything imports torch: a clear error where it cannot

from kolo._core import (QUERIES, HorovodInternalError, KoloError, KoloValueError, ccl_built, cuda_built, ddl_built,
                        gloo_built, gloo_enabled, is_homogeneous, mpi_built, mpi_enabled, nccl_built, rocm_built,
                        start_timeline, stop_timeline)
from kolo._mesh import Mesh, mesh
from kolo.torch.compression import Compression
from kolo.torch.functions import (allgather_object, broadcast_object, broadcast_optimizer_state,
                                  broadcast_parameters)
from kolo.torch.mpi_ops import (Adasum, Average, ProcessSet, add_process_set, global_process_set,
                                remove_process_set, Max, Min, Product, Sum, allgather, allgather_async, allreduce,
                                allreduce_, allreduce_async, allreduce_async_, alltoall, alltoall_async, barrier,
                                broadcast, broadcast_, broadcast_async, broadcast_async_, cross_rank, cross_size,
                                grouped_allgather, grouped_allgather_async, grouped_allreduce, grouped_allreduce_,
                                grouped_allreduce_async, grouped_allreduce_async_, grouped_reducescatter,
                                grouped_reducescatter_async, init, is_initialized, join, local_rank, local_size,
                                mpi_threads_supported, poll, rank, reducescatter, reducescatter_async, shutdown,
                                size, sparse_allreduce_async, synchronize)
from kolo.torch.optimizer import DistributedOptimizer
from kolo.torch.sync_batch_norm import SyncBatchNorm
from kolo.torch import elastic  # noqa: E402 (Horovod's hvd.elastic)

__all__ = [
    "Average", "Compression", "DistributedOptimizer", "KoloError", "KoloValueError", "Max", "Min", "Product", "Sum",
    "allgather", "allgather_async", "allgather_object", "allreduce", "allreduce_", "allreduce_async",
    "allreduce_async_", "alltoall", "alltoall_async", "barrier", "broadcast", "broadcast_", "broadcast_async",
    "broadcast_async_", "broadcast_object", "broadcast_optimizer_state", "broadcast_parameters", "cross_rank",
    "cross_size", "grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async", "grouped_allreduce_async_",
    "init", "is_initialized", "join", "local_rank", "local_size", "mpi_threads_supported", "poll", "rank",
    "reducescatter", "reducescatter_async", "shutdown", "size", "synchronize",
]
__all__ += ["Adasum", "HorovodInternalError", "SyncBatchNorm", "grouped_allgather", "grouped_allgather_async", "grouped_reducescatter",
            "grouped_reducescatter_async", "sparse_allreduce_async", "ProcessSet", "global_process_set",
            "add_process_set", "remove_process_set", "mesh", "Mesh", "elastic"] + list(QUERIES)
