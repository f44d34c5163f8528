"""What the backend makes anew when kolo's world changes in place (kolo.elastic's recovery after a lost peer):
torch fixes a group's rank and size when it makes it, and DDP's reducer holds its group, so both are made again
over the survivors. A group of an older world refuses every op (KoloProcessGroup.check_world), never a result
averaged over the old world's size."""
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from kolo._abi import INVALID_ARGUMENT, _C
from kolo._errors import KoloValueError


def _stale(group):
    from kolo.torch.backend._process_group import KoloProcessGroup
    return isinstance(group, KoloProcessGroup) and group.of_an_older_world()


def remake_default_group():
    """After recover_in_place, on every survivor: torch's default group, where it is a kolo group of an older
    world, made anew for this one (rank 0 serves its store, as under mpirun; the old one's may have gone with the
    lost peer)."""
    if not dist.is_initialized() or not _stale(c10d._get_default_group()):
        return
    from kolo.torch.backend._rendezvous import store_through_kolo
    from kolo.torch.backend import NAME
    dist.destroy_process_group()
    store, rank, size = store_through_kolo(c10d.default_pg_timeout)
    dist.init_process_group(NAME, store=store, rank=rank, world_size=size)


def remake_ddp(ddp):
    """A DistributedDataParallel on a kolo group of an older world, made again on torch's default group of this
    world (kolo.torch.elastic.TorchState calls it on restore): the same object, module and options, a new
    reducer, its comm hooks registered again (a hook's state that was the old group becomes the new one).
    Returns whether it was made again."""
    old = ddp.process_group
    if not _stale(old):
        return False
    if not old.whole_world:
        raise KoloValueError("kolo.torch.elastic on rank %d: a DistributedDataParallel on a torch group of some ranks "
                             "(%s) does not outlive a lost peer: kolo re-makes one on the default group only"
                             % (_C.rank(), old.job_ranks()), INVALID_ARGUMENT)
    new = c10d._get_default_group()
    hooks = list(getattr(ddp, "_comm_hooks", []))
    # The old reducer's hooks on the parameters, removed now rather than whenever that reducer is freed (something
    # still holding it, the failed step's traceback say, would keep them on beside the new reducer's).
    ddp._remove_autograd_hooks()
    # DDP's own pickling path, the one way torch makes a DDP's reducer again on the default group; its check that
    # the group is the default one is made true first.
    ddp.process_group = new
    attrs = ddp.__getstate__()
    attrs["_comm_hooks"] = []
    ddp.__setstate__(attrs)
    for hook, state in hooks:
        if state is old:
            state = new
        elif getattr(state, "process_group", None) is old:  # PowerSGD's state and its kind
            state.process_group = new
        ddp.register_comm_hook(state, hook)
    return True
