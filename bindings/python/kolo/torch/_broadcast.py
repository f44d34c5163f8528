"""broadcast on torch tensors: in place or not, async or with autograd."""
import torch

from kolo._abi import _C
from kolo._lifecycle import rank
from kolo._process_sets import global_process_set
from kolo._process_sets import set_id as _set_id
from kolo.torch._allreduce import allreduce_async
from kolo.torch._descriptors import _describe, _name
from kolo.torch._handles import _add, synchronize
from kolo.torch._reduce_ops import Average


def _broadcast_async(tensor, output, root_rank, name, process_set):
    handle = _C.broadcast_async(_name(name), _describe(tensor, name), _describe(output, name, "output"), int(root_rank),
                                _set_id(process_set, "broadcast of tensor '%s'", name or "(unnamed)"))
    return _add(handle, (tensor, output), lambda _: output, tensor)


def broadcast_async(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts a broadcast of root's `tensor` into a new tensor on every rank (root_rank: a job rank,
    which must be in the process set)."""
    return _broadcast_async(tensor, torch.empty_like(tensor, memory_format=torch.contiguous_format), root_rank, name,
                            process_set)


def broadcast_async_(tensor, root_rank, name=None, process_set=global_process_set):
    """Starts an in-place broadcast: `tensor` receives root's values."""
    return _broadcast_async(tensor, tensor, root_rank, name, process_set)


class _Broadcast(torch.autograd.Function):
    """The gradient reaches the root only: every rank's gradient averaged, as in Horovod (zero elsewhere)."""

    @staticmethod
    def forward(ctx, tensor, root_rank, name, process_set):
        ctx.root, ctx.process_set = root_rank, process_set
        return synchronize(broadcast_async(tensor, root_rank, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        grad = synchronize(allreduce_async(grad_output.contiguous(), op=Average, process_set=ctx.process_set))
        if rank() != ctx.root:
            grad.zero_()
        return grad, None, None, None


def broadcast(tensor, root_rank, name=None, process_set=global_process_set):
    """Root's `tensor` on every rank, as a new tensor; autograd flows through."""
    return _Broadcast.apply(tensor, root_rank, name, process_set)


def broadcast_(tensor, root_rank, name=None, process_set=global_process_set):
    """`tensor` receives root's values in place; returns it."""
    return synchronize(broadcast_async_(tensor, root_rank, name, process_set))
