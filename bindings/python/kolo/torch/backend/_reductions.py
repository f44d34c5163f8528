"""The collectives that reduce: all_reduce (and coalesced), reduce, reduce_scatter (list and single tensor)."""
import torch
import torch.distributed as dist

from kolo._abi import _C
from kolo.torch._allreduce import allreduce_, allreduce_async_
from kolo.torch._handles import _group_handle
from kolo.torch._reduce_ops import Average, Sum
from kolo.torch._row_collectives import _reducescatter_into_async, sparse_allreduce_async
from kolo.torch.backend._checks import flat as _flat, refuse as _refuse
from kolo.torch.backend._issue import blocking, finished, issue
from kolo.torch.backend._reduce_op import kolo_op, op_text


def _op(opts, collective):
    return kolo_op(opts.reduceOp if opts is not None else dist.ReduceOp.SUM, collective)


def allreduce(group, tensors, opts):
    op = _op(opts, "all_reduce")
    if len(tensors) == 1:
        t = tensors[0]
        if t.is_sparse:
            return _sparse_allreduce(group, t, op, opts)
        if blocking(opts) and not t.is_cuda:
            # kolo's own blocking call: one call into the engine, no handle (a metric's or a loss's path), and no
            # Work where torch takes none (_issue.finished).
            allreduce_(t, op=op, name=group.names.take_one(t), process_set=group.process_set)
            return finished(tensors)
        name, = named = group.names.take(1, t)
        return named.hold(issue(allreduce_async_(t, op=op, name=name, process_set=group.process_set),
                                lambda _: tensors, t, opts))
    return allreduce_coalesced(group, tensors, opts)


def _sparse_allreduce(group, t, op, opts):
    """A sparse COO tensor: kolo's sparse allreduce (every rank's indices and values gathered, then summed);
    the coalesced result replaces the tensor's contents, as Gloo's does."""
    group.check_world()
    if op not in (Sum, Average):
        _refuse("all_reduce", "a sparse tensor reduces with SUM or AVG, not %s", op_text(opts.reduceOp))
    return issue(sparse_allreduce_async(t, op=op, process_set=group.process_set), lambda result: [t.copy_(result)],
                 t, opts)


def allreduce_coalesced(group, tensors, opts):
    op = _op(opts, "all_reduce_coalesced")
    named = group.names.take(len(tensors), tensors[0])
    handles = [allreduce_async_(t, op=op, name=name, process_set=group.process_set) for t, name in zip(tensors, named)]
    return named.hold(issue(_group_handle(handles), lambda _: tensors, tensors[0], opts))


def reduce(group, tensors, opts):
    """An allreduce whose result only the root keeps (the others' tensors stay as they were, as Gloo's do)."""
    op = _op(opts, "reduce")
    t = tensors[0]
    root = group.job_rank(opts.rootRank, "reduce")
    target = t if _C.rank() == root else t.clone()
    name, = named = group.names.take(1, t)
    return named.hold(issue(allreduce_async_(target, op=op, name=name, process_set=group.process_set),
                            lambda _: tensors, t, opts))


def _reduce_scatter_handle(group, output, input, op, collective, name):
    """input: every rank's block, concatenated (or stacked); output: this rank's block of the reduction."""
    n = group.size()
    if input.numel() != n * output.numel():
        _refuse(collective, "the input has %d elements, not %d ranks x the output's %d", input.numel(), n,
                output.numel())
    return _reducescatter_into_async(_flat(input, collective, "input"), _flat(output, collective, "output"), name,
                                     op, group.process_set)


def reduce_scatter_single(group, output, input, opts, collective="reduce_scatter_tensor"):
    name, = named = group.names.take(1, input)
    handle = _reduce_scatter_handle(group, output, input, _op(opts, collective), collective, name)
    return named.hold(issue(handle, lambda _: [output], output, opts))


def reduce_scatter(group, outputs, input_lists, opts):
    output, inputs = outputs[0], input_lists[0]
    if len(inputs) != group.size():
        _refuse("reduce_scatter", "%d input tensors for a group of %d ranks", len(inputs), group.size())
    joined = torch.cat([t.reshape(-1) for t in inputs])
    return reduce_scatter_single(group, output, joined, opts, "reduce_scatter")


def reduce_scatter_coalesced(group, outputs, inputs, opts):
    collective = "reduce_scatter_tensor_coalesced"
    op = _op(opts, collective)
    named = group.names.take(len(outputs), inputs[0])
    handles = [_reduce_scatter_handle(group, o, i, op, collective, name) for o, i, name in zip(outputs, inputs, named)]
    return named.hold(issue(_group_handle(handles), lambda _: list(outputs), outputs[0], opts))
