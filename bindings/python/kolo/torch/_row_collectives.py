"""The collectives that work on rows (the first dimension) on torch tensors: allgather, alltoall,
reducescatter, and the allreduce of a sparse tensor (an allgather of its indices and values)."""
import torch

from kolo._abi import INVALID_ARGUMENT, _C
from kolo._errors import KoloValueError
from kolo._policy.scaling import check_differentiable
from kolo._process_sets import global_process_set
from kolo._process_sets import set_id as _set_id, set_rank as _set_rank, set_size as _set_size
from kolo.torch._allreduce import allreduce_async, grouped_allreduce_async
from kolo.torch._descriptors import _describe, _name, _wrap_output
from kolo.torch._handles import _add, _composite_handle, _group_handle, _group_names, synchronize
from kolo.torch._reduce_ops import Average, Sum


# ---- allgather ------------------------------------------------------------------------------------

def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts an allgather: every rank's `tensor` concatenated along the first dimension, which may
    differ per rank. synchronize(handle) returns the result."""
    handle = _C.allgather_async(_name(name), _describe(tensor, name),
                                _set_id(process_set, "allgather of tensor '%s'", name or "(unnamed)"))
    return _add(handle, (tensor,), lambda out: _wrap_output(out, tensor.dtype, tensor.device), tensor)


def _allgather_into_async(tensor, output, name, process_set=global_process_set):
    """An allgather whose result goes into `output` (every rank's rows exactly fill it; `tensor` may be
    this rank's block of it): a sharded optimizer's parameters, gathered without a copy."""
    handle = _C.allgather_async(_name(name), _describe(tensor, name),
                                _set_id(process_set, "allgather of tensor '%s'", name or "(unnamed)"),
                                output=_describe(output, name, "output"))
    return _add(handle, (tensor, output), lambda _: output, tensor)


class _Allgather(torch.autograd.Function):
    """The gradient of an allgather for this rank's input is its rows of the gradients averaged over
    the ranks (of the set), as in Horovod."""

    @staticmethod
    def forward(ctx, tensor, name, process_set):
        ctx.rows, ctx.process_set = tensor.shape[0], process_set
        return synchronize(allgather_async(tensor, name, process_set))

    @staticmethod
    def backward(ctx, grad_output):
        ps = ctx.process_set
        grad = synchronize(allreduce_async(grad_output.contiguous(), op=Average, process_set=ps))
        rows = synchronize(allgather_async(torch.tensor([ctx.rows], dtype=torch.int64, device="cpu"), process_set=ps))
        offset = int(rows[:_set_rank(ps)].sum().item())
        return grad.narrow(0, offset, ctx.rows), None, None


def allgather(tensor, name=None, process_set=global_process_set):
    """Concatenates every rank's `tensor` along the first dimension; autograd flows through."""
    return _Allgather.apply(tensor, name, process_set)


def grouped_allgather_async(tensors, name=None, process_set=global_process_set):
    """Starts allgathers of several tensors at once; synchronize(handle) returns their results."""
    return _group_handle([allgather_async(t, n, process_set)
                          for t, n in zip(tensors, _group_names(name, len(tensors)))])


class _GroupedAllgather(torch.autograd.Function):
    """Several allgathers negotiated together; each gradient as for one (see _Allgather)."""

    @staticmethod
    def forward(ctx, name, process_set, *tensors):
        ctx.rows, ctx.process_set = [t.shape[0] for t in tensors], process_set
        return tuple(synchronize(grouped_allgather_async(tensors, name, process_set)))

    @staticmethod
    def backward(ctx, *grads):
        ps = ctx.process_set
        summed = synchronize(grouped_allreduce_async([g.contiguous() for g in grads], op=Average, process_set=ps))
        rows = synchronize(allgather_async(torch.tensor([ctx.rows], dtype=torch.int64, device="cpu"), process_set=ps))
        offsets = rows[:_set_rank(ps)].sum(0).tolist()
        return (None, None) + tuple(g.narrow(0, int(o), n) for g, o, n in zip(summed, offsets, ctx.rows))


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """Allgathers of several tensors, negotiated and run together; autograd flows through."""
    return list(_GroupedAllgather.apply(name, process_set, *tensors))


# ---- alltoall, reducescatter ----------------------------------------------------------------------

def _splits_list(splits):
    if splits is None:
        return []
    if isinstance(splits, torch.Tensor):
        return [int(s) for s in splits.tolist()]
    return [int(s) for s in splits]


def alltoall_async(tensor, splits=None, name=None, process_set=global_process_set):
    """Starts an alltoall: splits[r] rows (first dimension) go to rank r (of the process set); without
    splits the rows are divided evenly. synchronize(handle) returns (output, received_splits)."""
    handle = _C.alltoall_async(_name(name), _describe(tensor, name), _splits_list(splits),
                               _set_id(process_set, "alltoall of tensor '%s'", name or "(unnamed)"))

    def finish(out):
        received = torch.tensor(out.received_splits, dtype=torch.int32, device="cpu")
        return _wrap_output(out, tensor.dtype, tensor.device), received

    return _add(handle, (tensor,), finish, tensor)


class _Alltoall(torch.autograd.Function):
    """The gradient goes back the way the rows came: an alltoall with the received splits."""

    @staticmethod
    def forward(ctx, tensor, splits, name, process_set):
        output, received = synchronize(alltoall_async(tensor, splits, name, process_set))
        ctx.received, ctx.process_set = received, process_set
        ctx.mark_non_differentiable(received)
        return output, received

    @staticmethod
    def backward(ctx, grad_output, _grad_received):
        grad, _ = synchronize(alltoall_async(grad_output.contiguous(), ctx.received, process_set=ctx.process_set))
        return grad, None, None, None


def alltoall(tensor, splits=None, name=None, process_set=global_process_set):
    """Scatters rows of `tensor` to the ranks and gathers theirs; autograd flows through.

    Returns the output, or (output, received_splits) when splits are given, as Horovod does.
    """
    output, received = _Alltoall.apply(tensor, splits, name, process_set)
    return output if splits is None else (output, received)


def reducescatter_async(tensor, name=None, op=Average, process_set=global_process_set, prescale_factor=1.0,
                        postscale_factor=1.0):
    """Starts a reducescatter: the reduction of every rank's `tensor`, of which this rank keeps its
    block of rows (rows divided as evenly as possible among the set's ranks, lower ones taking the
    extra ones)."""
    if tensor.dim() == 0:
        raise KoloValueError("reducescatter of tensor '%s': needs at least one dimension" % (name or "(unnamed)"),
                             INVALID_ARGUMENT)
    set_id = _set_id(process_set, "reducescatter of tensor '%s'", name or "(unnamed)")
    rows = _C.reducescatter_rows(tensor.shape[0], _set_rank(process_set), _set_size(process_set))
    output = tensor.new_empty((rows,) + tuple(tensor.shape[1:]))
    handle = _C.reducescatter_async(_name(name), _describe(tensor, name), _describe(output, name, "output"), op,
                                    float(prescale_factor), float(postscale_factor), set_id)
    return _add(handle, (tensor, output), lambda _: output, tensor)


def _reducescatter_into_async(tensor, output, name, op, process_set, prescale_factor=1.0, postscale_factor=1.0):
    """reducescatter_async into `output` (this rank's block's shape): a sharded optimizer's gradients,
    into the same memory every step."""
    set_id = _set_id(process_set, "reducescatter of tensor '%s'", name or "(unnamed)")
    handle = _C.reducescatter_async(_name(name), _describe(tensor, name), _describe(output, name, "output"), op,
                                    float(prescale_factor), float(postscale_factor), set_id)
    return _add(handle, (tensor, output), lambda _: output, tensor)


class _Reducescatter(torch.autograd.Function):
    """The gradient is the allgather of the blocks' gradients, scaled as the forward was and, for Sum,
    multiplied by the set's size: Horovod's formula."""

    @staticmethod
    def forward(ctx, tensor, name, op, process_set, prescale_factor, postscale_factor):
        ctx.op, ctx.scale, ctx.process_set = op, prescale_factor * postscale_factor, process_set
        return synchronize(reducescatter_async(tensor, name, op, process_set, prescale_factor, postscale_factor))

    @staticmethod
    def backward(ctx, grad_output):
        check_differentiable(ctx.op, "a reducescatter")
        grad = synchronize(allgather_async(grad_output.contiguous(), process_set=ctx.process_set))
        # Horovod's formula: the gathered gradients, times the set's size for Sum (not for Average).
        scale = ctx.scale * (_set_size(ctx.process_set) if ctx.op == Sum else 1)
        return (grad * scale if scale != 1 else grad), None, None, None, None, None


def reducescatter(tensor, name=None, compression=None, op=Average, process_set=global_process_set,
                  prescale_factor=1.0, postscale_factor=1.0):
    """This rank's block of rows of the reduction of every rank's `tensor`; autograd flows through.
    compression (e.g. Compression.fp16) applies on the way in and is undone on the way out."""
    from kolo.torch.compression import Compression
    compressed, ctx = (compression or Compression.none).compress(tensor)
    block = _Reducescatter.apply(compressed, name, op, process_set, prescale_factor, postscale_factor)
    return (compression or Compression.none).decompress(block, ctx)


def grouped_reducescatter_async(tensors, name=None, op=Average, process_set=global_process_set, prescale_factor=1.0,
                                postscale_factor=1.0):
    """Starts reducescatters of several tensors at once; synchronize(handle) returns their results."""
    return _group_handle([reducescatter_async(t, n, op, process_set, prescale_factor, postscale_factor)
                          for t, n in zip(tensors, _group_names(name, len(tensors)))])


def grouped_reducescatter(tensors, name=None, compression=None, op=Average, process_set=global_process_set,
                          prescale_factor=1.0, postscale_factor=1.0):
    """Reducescatters of several tensors, negotiated and run together; autograd flows through each."""
    return [reducescatter(t, n, compression, op, process_set, prescale_factor, postscale_factor)
            for t, n in zip(tensors, _group_names(name, len(tensors)))]


# ---- sparse allreduce -----------------------------------------------------------------------------
def sparse_allreduce_async(tensor, name=None, op=Average, process_set=global_process_set):
    """Starts the allreduce of a sparse COO tensor: every rank's indices and values are gathered
    (rows differ per rank) and synchronize(handle) returns the sum (or average over the ranks) as a
    sparse tensor of the same size, coalesced."""
    if not tensor.is_sparse:
        raise KoloValueError("sparse_allreduce_async of tensor '%s': expected a sparse COO tensor"
                             % (name or "(unnamed)"), INVALID_ARGUMENT)
    if op not in (Sum, Average):
        raise KoloValueError("sparse_allreduce_async of tensor '%s': only Sum and Average reduce sparse tensors"
                             % (name or "(unnamed)"), INVALID_ARGUMENT)
    t = tensor.coalesce()
    base = _name(name) or None
    # Rows: one per nonzero, so the indices travel transposed (nnz x ndim) and come back so.
    indices = allgather_async(t.indices().t().contiguous(), None if base is None else base + ".indices",
                              process_set)
    values = allgather_async(t.values().contiguous(), None if base is None else base + ".values", process_set)

    def combine(results):
        gathered_indices, gathered_values = results
        if op == Average:
            gathered_values = gathered_values / _set_size(process_set)
        return torch.sparse_coo_tensor(gathered_indices.t(), gathered_values, t.shape).coalesce()

    return _composite_handle([indices, values], combine)
