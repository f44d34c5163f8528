"""The collectives that move data without reducing it: broadcast, the allgathers, gather, scatter, the alltoalls,
and barrier. kolo has no gather or scatter of its own: they run as an allgather and a broadcast (every rank
moves what the root does), which gives the same results."""
import torch

from kolo._abi import _C
from kolo.torch._broadcast import broadcast_async_
from kolo.torch._handles import _group_handle, _handles
from kolo.torch._row_collectives import _allgather_into_async, alltoall_async
from kolo.torch.backend._checks import flat as _flat, refuse as _refuse
from kolo.torch.backend._issue import issue


def broadcast(group, tensors, opts):
    root = group.job_rank(opts.rootRank, "broadcast")
    named = group.names.take(len(tensors), tensors[0])
    handles = [broadcast_async_(t, root, name=name, process_set=group.process_set) for t, name in zip(tensors, named)]
    return named.hold(issue(handles[0] if len(handles) == 1 else _group_handle(handles), lambda _: tensors, tensors[0],
                            opts))


def _gather_handle(group, output, input, collective, name):
    """Every rank's `input` into `output`, by rank (output: the inputs concatenated or stacked)."""
    if output.numel() != group.size() * input.numel():
        _refuse(collective, "the output has %d elements, not %d ranks x the input's %d", output.numel(), group.size(),
                input.numel())
    if output.dtype != input.dtype:
        _refuse(collective, "the output's dtype %s is not the input's %s", output.dtype, input.dtype)
    return _allgather_into_async(_flat(input, collective, "input"), _flat(output, collective, "output"), name,
                                 group.process_set)


def all_gather_single(group, output, input, opts):
    name, = named = group.names.take(1, input)
    return named.hold(issue(_gather_handle(group, output, input, "all_gather_into_tensor", name), lambda _: [output],
                            output, opts))


def all_gather_single_coalesced(group, outputs, inputs, opts):
    named = group.names.take(len(outputs), inputs[0])
    handles = [_gather_handle(group, o, i, "all_gather_into_tensor_coalesced", name)
               for o, i, name in zip(outputs, inputs, named)]
    return named.hold(issue(_group_handle(handles), lambda _: list(outputs), outputs[0], opts))


def _gather_into_list(group, outputs, input, collective, name):
    """A handle gathering every rank's `input`, and what copies the ranks' parts into `outputs` (a list)."""
    if len(outputs) != group.size():
        _refuse(collective, "%d output tensors for a group of %d ranks", len(outputs), group.size())
    for o in outputs:
        if o.numel() != input.numel():
            _refuse(collective, "an output tensor of %d elements for an input of %d", o.numel(), input.numel())
    whole = input.new_empty((group.size() * input.numel(),))
    handle = _gather_handle(group, whole, input.contiguous(), collective, name)

    def copy_out():
        for part, o in zip(whole.chunk(group.size()), outputs):
            o.copy_(part.view_as(o))
        return outputs
    return handle, copy_out


def _gather_each(group, per_input, inputs, collective, opts, result):
    """Each input gathered into its list of outputs (per_input[i]: input i's, one per rank)."""
    named = group.names.take(len(inputs), inputs[0])
    parts = [_gather_into_list(group, outs, i, collective, name) for outs, i, name in zip(per_input, inputs, named)]

    def copy_out(_):
        for _, copy in parts:
            copy()
        return result
    return named.hold(issue(_group_handle([h for h, _ in parts]), copy_out, inputs[0], opts))


def allgather(group, output_lists, inputs, opts):
    # output_lists[i]: input i's outputs, one per rank.
    if len(inputs) != 1:
        return _gather_each(group, output_lists, inputs, "all_gather", opts, output_lists)
    name, = named = group.names.take(1, inputs[0])
    handle, copy_out = _gather_into_list(group, output_lists[0], inputs[0], "all_gather", name)
    return named.hold(issue(handle, lambda _: copy_out(), inputs[0], opts))


def allgather_coalesced(group, output_lists, inputs, opts):
    # all_gather_coalesced's output_lists[r] is rank r's inputs, one output per input (allgather's transposed).
    if len(output_lists) != group.size():
        _refuse("all_gather_coalesced", "%d output lists for a group of %d ranks", len(output_lists), group.size())
    for outs in output_lists:
        if len(outs) != len(inputs):
            _refuse("all_gather_coalesced", "an output list of %d tensors for %d inputs", len(outs), len(inputs))
    per_input = [list(outs) for outs in zip(*output_lists)]
    return _gather_each(group, per_input, inputs, "all_gather_coalesced", opts, output_lists)


def gather(group, output_lists, inputs, opts):
    root = opts.rootRank
    outputs = output_lists[0] if group.rank() == root else [torch.empty_like(inputs[0]) for _ in range(group.size())]
    name, = named = group.names.take(1, inputs[0])
    handle, copy_out = _gather_into_list(group, outputs, inputs[0], "gather", name)
    return named.hold(issue(handle, lambda _: copy_out() if group.rank() == root else [], inputs[0], opts))


def gather_single(group, output, input, opts):
    target = output if group.rank() == opts.rootRank else input.new_empty((group.size() * input.numel(),))
    name, = named = group.names.take(1, input)
    return named.hold(issue(_gather_handle(group, target, input.contiguous(), "gather_into_tensor", name),
                            lambda _: [output], input, opts))


def scatter(group, outputs, input_lists, opts):
    output = outputs[0]
    root = group.job_rank(opts.rootRank, "scatter")
    if group.rank() == opts.rootRank:
        if len(input_lists[0]) != group.size():
            _refuse("scatter", "%d input tensors for a group of %d ranks", len(input_lists[0]), group.size())
        whole = torch.cat([t.reshape(-1) for t in input_lists[0]])
    else:
        whole = output.new_empty((group.size() * output.numel(),))
    name, = named = group.names.take(1, output)
    handle = broadcast_async_(whole, root, name=name, process_set=group.process_set)
    mine = group.rank()

    def copy_out(_):
        output.copy_(whole.chunk(group.size())[mine].view_as(output))
        return [output]
    return named.hold(issue(handle, copy_out, output, opts))


def all_to_all_single(group, output, input, output_splits, input_splits, opts):
    """Rows (the first dimension) of `input` to each rank, by input_splits (evenly without), into `output`."""
    group.check_world()  # alltoall's ops are unnamed: no names.take to check it
    handle = alltoall_async(input.contiguous(), list(input_splits) or None, None, group.process_set)

    def copy_out(result):
        received, splits = result
        if output_splits and [int(s) for s in splits.tolist()] != [int(s) for s in output_splits]:
            _refuse("all_to_all_single", "received rows %s, but output_split_sizes says %s", splits.tolist(),
                    list(output_splits))
        if received.numel() != output.numel():
            _refuse("all_to_all_single", "received %d elements into an output of %d", received.numel(),
                    output.numel())
        output.copy_(received.view_as(output))
        return [output]
    return issue(handle, copy_out, input, opts)


def all_to_all(group, outputs, inputs, opts):
    """A list of tensors to each rank, and one from each: as rows of one flat tensor."""
    group.check_world()
    if len(inputs) != group.size() or len(outputs) != group.size():
        _refuse("all_to_all", "%d input and %d output tensors for a group of %d ranks", len(inputs), len(outputs),
                group.size())
    flat = torch.cat([t.reshape(-1) for t in inputs])
    handle = alltoall_async(flat, [t.numel() for t in inputs], None, group.process_set)

    def copy_out(result):
        received, splits = result
        if [int(s) for s in splits.tolist()] != [o.numel() for o in outputs]:
            _refuse("all_to_all", "received %s elements from the ranks for outputs of %s", splits.tolist(),
                    [o.numel() for o in outputs])
        for part, o in zip(received.split([o.numel() for o in outputs]), outputs):
            o.copy_(part.view_as(o))
        return outputs
    return issue(handle, copy_out, inputs[0], opts)


def barrier(group, opts):
    group.check_world()
    handle = _handles.add(_C.barrier_async(group.process_set.process_set_id), (), lambda _: None)
    sample = torch.empty(0, device="cpu")  # a barrier has no device: whatever torch's default, no stream to order
    return issue(handle, lambda _: [], sample, opts)
