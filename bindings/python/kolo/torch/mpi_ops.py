"""kolo's collectives on torch tensors, with Horovod's names and signatures.

Tensors cross into kolo without copies: kolo reads and writes their memory directly, and keeps a
reference to every tensor of an op until synchronize(), so their memory stays valid meanwhile.
Ops without a name are numbered per process: every rank must then make its unnamed calls in the
same order.
"""
# The ops live in modules by job (_allreduce, _row_collectives, _broadcast, _join; their handles in
# _handles, tensors' descriptors in _descriptors). Scripts import horovod.torch.mpi_ops, so this module
# gathers them and keeps every name it had before they moved: Horovod's face, no MPI. kolo's own modules take a
# private name from the module that owns it, not from here.
import torch  # noqa: F401 (a name this module has always had)

from kolo import _lifecycle, _process_sets
from kolo._abi import _C  # noqa: F401
from kolo._errors import KoloError, KoloValueError  # noqa: F401
from kolo._process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set  # noqa: F401
from kolo.torch._allreduce import (_Allreduce, _allreduce_args, _allreduce_async, _allreduce_now,  # noqa: F401
                                   _GroupedAllreduce, allreduce, allreduce_, allreduce_async, allreduce_async_,
                                   grouped_allreduce, grouped_allreduce_, grouped_allreduce_async,
                                   grouped_allreduce_async_)
from kolo.torch._broadcast import (_Broadcast, _broadcast_async, broadcast, broadcast_, broadcast_async,  # noqa: F401
                                   broadcast_async_)
from kolo.torch._descriptors import _DTYPES, _DTYPES_TEXT, _describe, _name, _wrap_output  # noqa: F401
from kolo.torch._handles import (_CallableHandle, _add, _composite_handle, _composites, _consumer_stream,  # noqa: F401
                                 _group_handle, _group_names, _handles, _next_composite, poll, synchronize)
from kolo.torch._join import barrier, join  # noqa: F401
from kolo.torch._reduce_ops import _OP_NAMES, Adasum, Average, Max, Min, Product, Sum, _op_of  # noqa: F401
from kolo.torch._row_collectives import (_Allgather, _Alltoall, _GroupedAllgather, _Reducescatter,  # noqa: F401
                                         _splits_list, allgather, allgather_async, alltoall, alltoall_async,
                                         grouped_allgather, grouped_allgather_async, grouped_reducescatter,
                                         grouped_reducescatter_async, reducescatter, reducescatter_async,
                                         sparse_allreduce_async)

_set_id, _set_rank, _set_size = _process_sets.set_id, _process_sets.set_rank, _process_sets.set_size

init = _lifecycle.init
shutdown = _lifecycle.shutdown
is_initialized = _lifecycle.is_initialized
size = _lifecycle.size
rank = _lifecycle.rank
local_size = _lifecycle.local_size
local_rank = _lifecycle.local_rank
cross_size = _lifecycle.cross_size
cross_rank = _lifecycle.cross_rank
mpi_threads_supported = _lifecycle.mpi_threads_supported
