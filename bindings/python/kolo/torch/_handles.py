"""Async op handles: registering an op's handle, synchronize() and poll(), and the composite handles
that stand for a group of ops."""
import torch

from kolo._errors import KoloError
from kolo._in_flight import Handles

_handles = Handles()


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


def _group_names(name, count):
    return [None] * count if name is None else ["%s.%d" % (name, i) for i in range(count)]


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
