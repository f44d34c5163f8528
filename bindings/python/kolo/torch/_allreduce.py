"""allreduce on torch tensors: one tensor or a group, in place or not, blocking, async or with autograd."""
import torch

from kolo._abi import COMPRESSION_NONE, _C
from kolo._process_sets import global_process_set
from kolo._process_sets import set_id as _set_id
from kolo.torch._descriptors import _DTYPES, _describe, _name
from kolo.torch._handles import _add, _group_handle, _group_names, _handles, synchronize
from kolo._policy.compression import engine_compression
from kolo._policy.scaling import check_differentiable
from kolo.torch._reduce_ops import Adasum, _op_of


# Looked up once: allreduce_ (and allreduce_async_) of a scalar counts each step. kolo's one entry for an
# allreduce: (name, input, output or None for in place, op, prescale, postscale, process set, compression,
# blocking); a contiguous CPU tensor is described by (data, dtype, shape) alone, with compression 0 (none).
_allreduce = _C.allreduce


def _allreduce_args(tensor, output, name, op, prescale_factor, postscale_factor, process_set, compression):
    """_C.allreduce's arguments but the last (blocking), the tensors fully described."""
    described_input = _describe(tensor, name)
    described_output = None if output is tensor else _describe(output, name, "output")  # None: in place
    described = (_name(name), described_input, described_output)  # checked first
    return described + (op, float(prescale_factor), float(postscale_factor),
                        _set_id(process_set, "allreduce of tensor '%s'", name or "(unnamed)"), compression)


def _allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor, process_set,
                     compression=COMPRESSION_NONE):
    handle = _allreduce(*_allreduce_args(tensor, output, name, op, prescale_factor, postscale_factor, process_set,
                                         compression), False)
    return _add(handle, (tensor, output), lambda _: output, tensor)


def _allreduce_now(tensor, output, name, op, prescale_factor, postscale_factor, process_set, compression):
    """A blocking allreduce into `output`: for a CPU tensor one call into kolo, whose cycle may then run
    on this thread (KOLO_CALLER_DRIVES); a GPU tensor goes the stream-ordered way."""
    if tensor.is_cuda:
        return synchronize(_allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor, process_set,
                                            compression))
    _allreduce(*_allreduce_args(tensor, output, name, op, prescale_factor, postscale_factor, process_set,
                                compression), True)
    return output


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                    process_set=global_process_set, _compression=COMPRESSION_NONE):
    """Starts an allreduce of `tensor` into a new tensor; synchronize(handle) returns it."""
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return _allreduce_async(tensor, output, name, _op_of(op, average), prescale_factor, postscale_factor, process_set,
                            _compression)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                     process_set=global_process_set, _compression=COMPRESSION_NONE):
    """Starts an in-place allreduce of `tensor`."""
    if op is None or average is not None:
        op = _op_of(op, average)
    dtype = _DTYPES.get(tensor.dtype) if type(tensor) is torch.Tensor else None
    if dtype is not None and _compression == COMPRESSION_NONE and not tensor.is_cuda and tensor.is_contiguous():
        # A contiguous CPU tensor (a metric, a loss): one call with no descriptors, as in allreduce_.
        handle = _allreduce(
            name if type(name) is str else "" if name is None else str(name), (tensor.data_ptr(), dtype, tensor.shape),
            None, op, prescale_factor, postscale_factor,
            0 if process_set is global_process_set else
            _set_id(process_set, "allreduce of tensor '%s'", name or "(unnamed)"), 0, False)
        return _handles.add(handle, tensor, lambda _: tensor)
    return _allreduce_async(tensor, tensor, name, op, prescale_factor, postscale_factor, process_set, _compression)


class _Allreduce(torch.autograd.Function):
    """The gradient of an allreduce is the allreduce of the gradients (same op and scaling)."""

    @staticmethod
    def forward(ctx, tensor, name, op, prescale_factor, postscale_factor, compression, process_set):
        ctx.op, ctx.prescale, ctx.postscale, ctx.compression = op, prescale_factor, postscale_factor, compression
        ctx.process_set = process_set
        output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
        return _allreduce_now(tensor, output, name, op, prescale_factor, postscale_factor, process_set, compression)

    @staticmethod
    def backward(ctx, grad_output):
        check_differentiable(ctx.op)
        grad = synchronize(allreduce_async(grad_output.contiguous(), op=ctx.op, prescale_factor=ctx.prescale,
                                           postscale_factor=ctx.postscale, process_set=ctx.process_set,
                                           _compression=ctx.compression))
        return grad, None, None, None, None, None, None


def allreduce(tensor, average=None, name=None, compression=None, op=None, prescale_factor=1.0,
              postscale_factor=1.0, process_set=global_process_set):
    """Reduces `tensor` across ranks (Average by default) into a new tensor; autograd flows through.

    compression (e.g. Compression.fp16) is applied on the way into the collective and undone on the
    way out.
    """
    if (compression is None and type(tensor) is torch.Tensor and not tensor.is_cuda
            and not (tensor.requires_grad and torch.is_grad_enabled())):
        # Outside autograd on the CPU (a metric, a loss): one call into kolo, without the autograd Function's
        # steps (most of a small op's time from Python). A contiguous tensor is reduced into a new one;
        # another, a contiguous copy of it in place.
        dtype = _DTYPES.get(tensor.dtype)
        if dtype is None or not tensor.is_contiguous():
            return allreduce_(tensor.clone(memory_format=torch.contiguous_format), average, name, op,
                              prescale_factor, postscale_factor, process_set)
        if op is None or average is not None:
            op = _op_of(op, average)
        output = torch.empty_like(tensor)
        _allreduce(name if type(name) is str else "" if name is None else str(name),
                   (tensor.data_ptr(), dtype, tensor.shape), (output.data_ptr(), dtype, tensor.shape), op,
                   prescale_factor, postscale_factor,
                   0 if process_set is global_process_set else
                   _set_id(process_set, "allreduce of tensor '%s'", name or "(unnamed)"), 0, True)
        return output
    from kolo.torch.compression import Compression
    compression = compression or Compression.none
    code = engine_compression(compression, tensor.dtype == torch.float32)
    if code is not None and _op_of(op, average) == Adasum and code != COMPRESSION_NONE:
        code = None  # Adasum combines in the tensor's own dtype: the cast happens here, as in Horovod
    if code is not None:  # kolo casts in its pack and unpack
        return _Allreduce.apply(tensor, name, _op_of(op, average), prescale_factor, postscale_factor, code, process_set)
    compressed, ctx = compression.compress(tensor)
    reduced = _Allreduce.apply(compressed, name, _op_of(op, average), prescale_factor, postscale_factor,
                               COMPRESSION_NONE, process_set)
    return compression.decompress(reduced, ctx)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set):
    """Reduces `tensor` in place and returns it."""
    if op is None or average is not None:
        op = _op_of(op, average)
    dtype = _DTYPES.get(tensor.dtype) if type(tensor) is torch.Tensor else None
    if dtype is not None and not tensor.is_cuda and tensor.is_contiguous():
        # A contiguous CPU tensor (a loss, a metric): one call with no descriptors, its error raised there.
        # (Each step here is on a small op's path: torch.Size is a tuple, the factors are converted there.)
        _allreduce(name if type(name) is str else "" if name is None else str(name),
                   (tensor.data_ptr(), dtype, tensor.shape), None, op, prescale_factor, postscale_factor,
                   0 if process_set is global_process_set else
                   _set_id(process_set, "allreduce of tensor '%s'", name or "(unnamed)"), 0, True)
        return tensor
    return _allreduce_now(tensor, tensor, name, op, prescale_factor, postscale_factor, process_set, COMPRESSION_NONE)


def grouped_allreduce_async(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                            process_set=global_process_set):
    """Starts allreduces of several tensors at once (kolo fuses them when they are ready together);
    synchronize(handle) returns the list of results."""
    handles = [allreduce_async(t, average, n, op, prescale_factor, postscale_factor, process_set)
               for t, n in zip(tensors, _group_names(name, len(tensors)))]
    return _group_handle(handles)


def grouped_allreduce_async_(tensors, average=None, name=None, op=None, prescale_factor=1.0,
                             postscale_factor=1.0, process_set=global_process_set):
    handles = [allreduce_async_(t, average, n, op, prescale_factor, postscale_factor, process_set)
               for t, n in zip(tensors, _group_names(name, len(tensors)))]
    return _group_handle(handles)


class _GroupedAllreduce(torch.autograd.Function):
    """Several allreduces negotiated together; the gradients go back the same way, together."""

    @staticmethod
    def forward(ctx, name, op, prescale_factor, postscale_factor, process_set, *tensors):
        ctx.op, ctx.prescale, ctx.postscale, ctx.process_set = op, prescale_factor, postscale_factor, process_set
        return tuple(synchronize(grouped_allreduce_async(list(tensors), None, name, op, prescale_factor,
                                                         postscale_factor, process_set)))

    @staticmethod
    def backward(ctx, *grads):
        check_differentiable(ctx.op)
        reduced = synchronize(grouped_allreduce_async([g.contiguous() for g in grads], op=ctx.op,
                                                      prescale_factor=ctx.prescale, postscale_factor=ctx.postscale,
                                                      process_set=ctx.process_set))
        return (None, None, None, None, None) + tuple(reduced)


def grouped_allreduce(tensors, average=None, name=None, compression=None, op=None, prescale_factor=1.0,
                      postscale_factor=1.0, process_set=global_process_set):
    """Allreduces of several tensors, negotiated together; autograd flows through them."""
    if compression is None:
        return list(_GroupedAllreduce.apply(name, _op_of(op, average), prescale_factor, postscale_factor, process_set,
                                            *tensors))
    return [allreduce(t, average, n, compression, op, prescale_factor, postscale_factor, process_set)
            for t, n in zip(tensors, _group_names(name, len(tensors)))]


def grouped_allreduce_(tensors, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                       process_set=global_process_set):
    return synchronize(grouped_allreduce_async_(tensors, average, name, op, prescale_factor, postscale_factor,
                                                process_set))
