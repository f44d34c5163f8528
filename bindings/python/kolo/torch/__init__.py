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

from kolo._policy.exports import *  # noqa: F401,F403 (the names every binding exports)
from kolo._policy import exports as _exports
from kolo.torch.compression import Compression
from kolo.torch.functions import (allgather_object, broadcast_object, broadcast_optimizer_state,
                                  broadcast_parameters)
from kolo.torch.mpi_ops import (allgather, allgather_async, allreduce, allreduce_, allreduce_async, allreduce_async_,
                                alltoall, alltoall_async, barrier, broadcast, broadcast_, broadcast_async,
                                broadcast_async_, grouped_allgather, grouped_allgather_async, grouped_allreduce,
                                grouped_allreduce_, grouped_allreduce_async, grouped_allreduce_async_,
                                grouped_reducescatter, grouped_reducescatter_async, join, poll, reducescatter,
                                reducescatter_async, sparse_allreduce_async, synchronize)
from kolo.torch.optimizer import DistributedOptimizer
from kolo.torch.sync_batch_norm import SyncBatchNorm
from kolo.torch import elastic  # noqa: E402 (Horovod's hvd.elastic)
from kolo.torch import backend as _backend

import torch.distributed as _dist
if _dist.is_available():
    _backend.register()  # dist.init_process_group("kolo")

# The shared names, then what every binding supplies itself (exports.PER_BINDING), then this one's own.
__all__ = _exports.__all__ + ["allreduce", "allgather", "broadcast", "reducescatter", "Compression", "broadcast_object",
                              "allgather_object", "elastic"] + [
    "DistributedOptimizer", "SyncBatchNorm", "allgather_async", "allreduce_", "allreduce_async", "allreduce_async_",
    "alltoall", "alltoall_async", "barrier", "broadcast_", "broadcast_async", "broadcast_async_",
    "broadcast_optimizer_state", "broadcast_parameters", "grouped_allgather", "grouped_allgather_async",
    "grouped_allreduce", "grouped_allreduce_", "grouped_allreduce_async", "grouped_allreduce_async_",
    "grouped_reducescatter", "grouped_reducescatter_async", "join", "poll", "reducescatter_async",
    "sparse_allreduce_async", "synchronize"]
