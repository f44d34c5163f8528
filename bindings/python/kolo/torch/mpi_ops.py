"""kolo's collectives on torch tensors, with Horovod's names and signatures.

Tensors cross into kolo without copies: kolo reads and writes their memory directly, and keeps a
reference to every tensor of an op until synchronize(), so their memory stays valid meanwhile.
Ops without a name are numbered per process: every rank must then make its unnamed calls in the
same order.
"""
import torch

from kolo import _core, _process_sets
from kolo._core import KoloError, KoloValueError, _C
from kolo._process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set

_set_id, _set_rank, _set_size = _process_sets.set_id, _process_sets.set_rank, _process_sets.set_size

# Reduce ops.
Sum = _core.SUM
Average = _core.AVERAGE
Min = _core.MIN
Max = _core.MAX
Product = _core.PRODUCT
Adasum = _core.ADASUM  # adaptive summation (floating-point tensors); see DistributedOptimizer for its use
_OP_NAMES = {Sum: "Sum", Average: "Average", Min: "Min", Max: "Max", Product: "Product", Adasum: "Adasum"}

_DTYPES = {
    torch.uint8: _core.UINT8,
    torch.int8: _core.INT8,
    torch.int16: _core.INT16,
    torch.int32: _core.INT32,
    torch.int64: _core.INT64,
    torch.float16: _core.FLOAT16,
    torch.bfloat16: _core.BFLOAT16,
    torch.float32: _core.FLOAT32,
    torch.float64: _core.FLOAT64,
    torch.bool: _core.BOOL,
}
if hasattr(torch, "uint16"):  # torch 2.3 and later
    _DTYPES[torch.uint16] = _core.UINT16
_DTYPES_TEXT = ", ".join(str(t).replace("torch.", "") for t in _DTYPES)

_handles = _core.Handles()

init = _core.init
shutdown = _core.shutdown
is_initialized = _core.is_initialized
size = _core.size
rank = _core.rank
local_size = _core.local_size
local_rank = _core.local_rank
cross_size = _core.cross_size
cross_rank = _core.cross_rank
mpi_threads_supported = _core.mpi_threads_supported


def _describe(tensor, name, role="input"):
    """The descriptor kolo's C ABI takes for `tensor`; strides go along so kolo can refuse
    non-contiguous tensors, naming them."""
    if not isinstance(tensor, torch.Tensor):
        raise KoloValueError("tensor '%s': expected a torch.Tensor as %s, got %s"
                             % (name or "(unnamed)", role, type(tensor).__name__), _core.INVALID_ARGUMENT)
    code = _DTYPES.get(tensor.dtype)
    if code is None:
        raise KoloValueError(
            "tensor '%s' on rank %d: %s has dtype %s; kolo supports %s"
            % (name or "(unnamed)", _C.rank(), role, tensor.dtype, _DTYPES_TEXT),
            _core.INVALID_ARGUMENT)
    if tensor.is_cuda:
        device_type, index = _core.CUDA, tensor.device.index
        stream = torch.cuda.current_stream(tensor.device).cuda_stream
    else:
        device_type, index, stream = _core.CPU, 0, 0
    return (tensor.data_ptr(), code, tuple(tensor.shape), tuple(tensor.stride()), device_type, index, stream)


_op_of = _core.op_of


def _name(name):
    return "" if name is None else str(name)


def _wrap_output(output, dtype, device):
    """A tensor over the memory kolo allocated for an output, without copying it (the tensor keeps
    kolo's buffer alive): host memory through the buffer protocol, GPU memory through CUDA's array
    interface."""
    shape = tuple(output.shape)
    if output.size_bytes == 0:
        return torch.empty(shape, dtype=dtype, device=device)
    if device.type == "cuda":
        return torch.as_tensor(output, device=device).view(dtype).reshape(shape)
    return torch.frombuffer(output, dtype=torch.uint8).view(dtype).reshape(shape)


def _consumer_stream(tensor):
    """For a GPU tensor: what gives the stream that will use an op's results when the op is
    synchronized (the current stream then), which waits for kolo's work on the device; None for a
    CPU tensor (the host waits)."""
    if not tensor.is_cuda:
        return None
    device = tensor.device
    return lambda: torch.cuda.current_stream(device).cuda_stream


def _add(handle, keep, finish, tensor):
    return _handles.add(handle, keep, finish, _consumer_stream(tensor))


# ---- allreduce ------------------------------------------------------------------------------------

def _allreduce_args(tensor, output, name, op, prescale_factor, postscale_factor, process_set, compression):
    """What _C.allreduce_async and _C.allreduce take."""
    described_input = _describe(tensor, name)
    described_output = described_input if output is tensor else _describe(output, name, "output")  # in place
    described = (_name(name), described_input, described_output)  # checked first
    return described + (op, float(prescale_factor), float(postscale_factor), compression,
                        _set_id(process_set, "allreduce of tensor '%s'", name or "(unnamed)"))


def _allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor, process_set,
                     compression=_core.COMPRESSION_NONE):
    handle = _C.allreduce_async(*_allreduce_args(tensor, output, name, op, prescale_factor, postscale_factor,
                                                 process_set, compression))
    return _add(handle, (tensor, output), lambda _: output, tensor)


def _allreduce_now(tensor, output, name, op, prescale_factor, postscale_factor, process_set, compression):
    """A blocking allreduce into `output`: for a CPU tensor one call into kolo, whose cycle may then run
    on this thread (KOLO_CALLER_DRIVES); a GPU tensor goes the stream-ordered way."""
    if tensor.is_cuda:
        return synchronize(_allreduce_async(tensor, output, name, op, prescale_factor, postscale_factor, process_set,
                                            compression))
    code, message = _C.allreduce(*_allreduce_args(tensor, output, name, op, prescale_factor, postscale_factor,
                                                  process_set, compression))
    if code != _core.OK:
        raise _core.error_for(code, message)
    return output


def allreduce_async(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                    process_set=global_process_set, _compression=_core.COMPRESSION_NONE):
    """Starts an allreduce of `tensor` into a new tensor; synchronize(handle) returns it."""
    output = torch.empty_like(tensor, memory_format=torch.contiguous_format)
    return _allreduce_async(tensor, output, name, _op_of(op, average), prescale_factor, postscale_factor, process_set,
                            _compression)


def allreduce_async_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
                     process_set=global_process_set, _compression=_core.COMPRESSION_NONE):
    """Starts an in-place allreduce of `tensor`."""
    return _allreduce_async(tensor, tensor, name, _op_of(op, average), prescale_factor, postscale_factor, process_set,
                            _compression)


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
        if ctx.op not in (Sum, Average):
            raise KoloError("the gradient of an allreduce with op %s is not defined; use Sum or Average"
                            % _OP_NAMES.get(ctx.op, ctx.op))
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
    from kolo.torch.compression import Compression, engine_compression
    compression = compression or Compression.none
    code = engine_compression(compression, tensor)
    if code is not None and _op_of(op, average) == Adasum and code != _core.COMPRESSION_NONE:
        code = None  # Adasum combines in the tensor's own dtype: the cast happens here, as in Horovod
    if code is not None:  # kolo casts in its pack and unpack
        return _Allreduce.apply(tensor, name, _op_of(op, average), prescale_factor, postscale_factor, code, process_set)
    compressed, ctx = compression.compress(tensor)
    reduced = _Allreduce.apply(compressed, name, _op_of(op, average), prescale_factor, postscale_factor,
                               _core.COMPRESSION_NONE, process_set)
    return compression.decompress(reduced, ctx)


def allreduce_(tensor, average=None, name=None, op=None, prescale_factor=1.0, postscale_factor=1.0,
               process_set=global_process_set):
    """Reduces `tensor` in place and returns it."""
    return _allreduce_now(tensor, tensor, name, _op_of(op, average), prescale_factor, postscale_factor, process_set,
                          _core.COMPRESSION_NONE)


def _group_names(name, count):
    return [None] * count if name is None else ["%s.%d" % (name, i) for i in range(count)]


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
        if ctx.op not in (Sum, Average):
            raise KoloError("the gradient of an allreduce with op %s is not defined; use Sum or Average"
                            % _OP_NAMES.get(ctx.op, ctx.op))
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


# Composite ops (grouped ops, a sparse allreduce): a handle standing for several, whose
# synchronize() combines their results. Negative, so it never collides with kolo's handles, which
# are positive.
_composites = {}
_next_composite = [-1]


class _CallableHandle(int):
    """A composite op's handle; calling it synchronizes it (Horovod's sparse_allreduce_async hands back
    a function)."""

    def __call__(self):
        return synchronize(self)


def _composite_handle(handles, combine=list):
    key = _next_composite[0]
    _next_composite[0] -= 1
    _composites[key] = (handles, combine)
    return _CallableHandle(key)


def _group_handle(handles):
    return _composite_handle(handles)


def synchronize(handle):
    """Waits for an async op and returns its result (the output tensor; for alltoall a tuple with
    the received splits; for a grouped op the list of results). Raises KoloError when the op
    failed on this rank."""
    if int(handle) in _composites:
        handles, combine = _composites.pop(int(handle))
        results, error = [], None
        for h in handles:  # wait for all, even after a failure, so no handle is left behind
            try:
                results.append(synchronize(h))
            except KoloError as e:
                error = error or e
        if error is not None:
            raise error
        return combine(results)
    return _handles.synchronize(handle)


def poll(handle):
    """True once the op has finished (synchronize() will not block)."""
    if int(handle) in _composites:
        return all(poll(h) for h in _composites[int(handle)][0])
    return _handles.poll(handle)


# ---- allgather ------------------------------------------------------------------------------------

def allgather_async(tensor, name=None, process_set=global_process_set):
    """Starts an allgather: every rank's `tensor` concatenated along the first dimension, which may
    differ per rank. synchronize(handle) returns the result."""
    handle = _C.allgather_async(_name(name), _describe(tensor, name),
                                _set_id(process_set, "allgather of tensor '%s'", name or "(unnamed)"))
    return _add(handle, (tensor,), lambda out: _wrap_output(out, tensor.dtype, tensor.device), tensor)


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
        rows = synchronize(allgather_async(torch.tensor([ctx.rows], dtype=torch.int64), process_set=ps))
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
        rows = synchronize(allgather_async(torch.tensor([ctx.rows], dtype=torch.int64), process_set=ps))
        offsets = rows[:_set_rank(ps)].sum(0).tolist()
        return (None, None) + tuple(g.narrow(0, int(o), n) for g, o, n in zip(summed, offsets, ctx.rows))


def grouped_allgather(tensors, name=None, process_set=global_process_set):
    """Allgathers of several tensors, negotiated and run together; autograd flows through."""
    return list(_GroupedAllgather.apply(name, process_set, *tensors))


# ---- broadcast ------------------------------------------------------------------------------------

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
        received = torch.tensor(out.received_splits, dtype=torch.int32)
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
                             _core.INVALID_ARGUMENT)
    set_id = _set_id(process_set, "reducescatter of tensor '%s'", name or "(unnamed)")
    rows = _C.reducescatter_rows(tensor.shape[0], _set_rank(process_set), _set_size(process_set))
    output = tensor.new_empty((rows,) + tuple(tensor.shape[1:]))
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
        if ctx.op not in (Sum, Average):
            raise KoloError("the gradient of a reducescatter with op %s is not defined; use Sum or Average"
                            % _OP_NAMES.get(ctx.op, ctx.op))
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
                             % (name or "(unnamed)"), _core.INVALID_ARGUMENT)
    if op not in (Sum, Average):
        raise KoloValueError("sparse_allreduce_async of tensor '%s': only Sum and Average reduce sparse tensors"
                             % (name or "(unnamed)"), _core.INVALID_ARGUMENT)
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


# ---- barrier, join --------------------------------------------------------------------------------

def barrier(process_set=global_process_set):
    """Returns once every rank (of the process set) has called barrier()."""
    _handles.synchronize(_handles.add(_C.barrier_async(_set_id(process_set, "barrier")), (), lambda _: None))


def join(device=-1):
    """This rank has no more data: until every rank has joined, it takes part in the others'
    allreduces (contributing zeros; an Average divides by every rank, as in Horovod, unless
    KOLO_JOIN_AVERAGE=contributors), allgathers (no
    rows), broadcasts and barriers. Returns the last rank to join. `device` is accepted for
    Horovod compatibility."""
    return _handles.synchronize(_handles.add(_C.join_async(), (), lambda out: out.last_joined_rank))
