"""Bringing every rank to the same state: parameters, optimizer state, arbitrary objects."""
from collections.abc import Mapping

import torch

from kolo._policy.objects import ObjectCollectives
from kolo.torch import mpi_ops


def broadcast_parameters(params, root_rank, process_set=mpi_ops.global_process_set):
    """Copies root's parameters to every rank (of the process set), in place.

    `params`: a model's state_dict(), or named_parameters() (a list of (name, tensor) pairs).
    """
    if isinstance(params, Mapping):
        items = sorted(params.items())
    elif isinstance(params, list) or hasattr(params, "__iter__"):
        items = list(params)
        if items and not (isinstance(items[0], tuple) and len(items[0]) == 2):
            raise ValueError("broadcast_parameters takes a state_dict or named_parameters()")
    else:
        raise ValueError("invalid params of type %s" % type(params).__name__)
    handles = []
    for name, p in items:
        if p is None or not isinstance(p, torch.Tensor):
            continue
        target = p.data if isinstance(p, torch.nn.Parameter) else p
        handles.append(mpi_ops.broadcast_async_(target, root_rank, name="broadcast_parameters." + name,
                                                process_set=process_set))
    for h in handles:
        mpi_ops.synchronize(h)


def _broadcast_bytes(array, name, root_rank, process_set):
    return mpi_ops.broadcast_(torch.from_numpy(array), root_rank, name=name, process_set=process_set).numpy()


def _allgather_bytes(array, name, process_set):
    return mpi_ops.allgather(torch.from_numpy(array), name=name, process_set=process_set).numpy()


# kolo._policy.objects's, over torch tensors (on this rank's CPU).
_objects = ObjectCollectives(_broadcast_bytes, _allgather_bytes)
broadcast_object = _objects.broadcast_object
allgather_object = _objects.allgather_object


def broadcast_optimizer_state(optimizer, root_rank, model=None, process_set=mpi_ops.global_process_set):
    """Copies root's optimizer state (hyperparameters of every parameter group, and per-parameter
    state such as momentum buffers) to every rank.

    The structure travels as one pickled object; every tensor in it travels as a kolo broadcast,
    so large state costs no pickling. An optimizer that has not stepped yet gets its state first, as
    in Horovod: zero gradients and one step of the optimizer itself (`model` tells which parameters
    are a sparse embedding's, whose gradients are then sparse). A sharded optimizer
    (DistributedOptimizer(zero_stage=1|2)) gets the job's state as root sees it, consolidated there.
    """
    if isinstance(optimizer, torch.optim.LBFGS):
        raise ValueError("cannot broadcast torch.optim.LBFGS state (its state nests parameters' tensors deeply)")
    if hasattr(optimizer, "_broadcast_state"):
        optimizer._broadcast_state(root_rank)
        return
    if len(optimizer.state_dict()["state"]) == 0:
        _initialize_state(optimizer, model)
    new_state = broadcast_state_dict(optimizer.state_dict() if mpi_ops.rank() == root_rank else None, root_rank,
                                     process_set)
    failure = None
    if mpi_ops.rank() != root_rank:
        try:
            optimizer.load_state_dict(new_state)
        except Exception as e:  # noqa: BLE001 - reported on every rank below
            failure = "%s: %s" % (type(e).__name__, e)
    _fail_everywhere(failure, "broadcast_optimizer_state", process_set)


def broadcast_state_dict(state, root_rank, process_set=mpi_ops.global_process_set):
    """Root's `state` (an optimizer's state dict; None elsewhere) on every rank: its structure as one
    pickled object, each of its tensors as a kolo broadcast."""
    tensors = []

    def strip(value):
        # Tensors replaced by their index in `tensors`, with what it takes to receive them.
        if isinstance(value, torch.Tensor):
            tensors.append(value)
            return ("__kolo_tensor__", len(tensors) - 1, tuple(value.shape), str(value.dtype).replace("torch.", ""))
        if isinstance(value, dict):
            return {k: strip(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(strip(v) for v in value)
        return value

    root = mpi_ops.rank() == root_rank
    skeleton = broadcast_object(strip(state) if root else None, root_rank, name="broadcast_optimizer_state",
                                process_set=process_set)
    received = []

    def fill(value):
        if isinstance(value, tuple) and len(value) == 4 and value[0] == "__kolo_tensor__":
            _, index, shape, dtype = value
            t = tensors[index].contiguous() if root else torch.empty(shape, dtype=getattr(torch, dtype))
            received.append((index, t))
            return t
        if isinstance(value, dict):
            return {k: fill(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(fill(v) for v in value)
        return value

    new_state = fill(skeleton)
    handles = [mpi_ops.broadcast_async_(t, root_rank, name="broadcast_optimizer_state.%d" % i, process_set=process_set)
               for i, t in received]
    for h in handles:
        mpi_ops.synchronize(h)
    return new_state


def _initialize_state(optimizer, model):
    """A new optimizer has no state (momentum buffers, Adam's moments) until its first step; make it as
    Horovod does, so that every rank has the same state and the same (zero) gradients afterwards: zero
    gradients (sparse ones for SparseAdam and for a model's sparse embeddings), then one step of the
    optimizer itself, without the distributed optimizer's reduction."""
    sparse = set()
    if model is not None:
        for module in model.modules():
            if isinstance(module, torch.nn.Embedding) and module.sparse:
                sparse.update(id(p) for p in module.parameters())
    for group in optimizer.param_groups:
        for p in group["params"]:
            if p.requires_grad:
                p.grad = torch.zeros_like(p)
                if isinstance(optimizer, torch.optim.SparseAdam) or \
                        (isinstance(optimizer, torch.optim.SGD) and id(p) in sparse):
                    p.grad = p.grad.to_sparse()
    if hasattr(type(optimizer), "skip_synchronize"):  # a DistributedOptimizer: its wrapped class's step
        super(optimizer.__class__, optimizer).step()
    else:
        optimizer.step()


def _fail_everywhere(failure, what, process_set=mpi_ops.global_process_set):
    """Every rank learns whether `what` failed on any rank, and then all raise: a rank left behind
    would otherwise wait forever in the next collective for the rank that raised."""
    failures = allgather_object(failure, name=what + ".outcome", process_set=process_set)
    ranks = process_set.ranks
    bad = [(ranks[i], f) for i, f in enumerate(failures) if f is not None]
    if bad:
        raise mpi_ops.KoloError("%s failed on %s" % (what, "; ".join("rank %d: %s" % (r, f) for r, f in bad)))
