"""kolo as a torch.distributed backend: ``dist.init_process_group("kolo")``.

    import kolo.torch                      # registers the backend (torch 2.15 finds it without the import)
    import torch.distributed as dist
    dist.init_process_group("kolo")        # under kolorun, kolorun --gloo, torchrun, mpirun or srun
    model = torch.nn.parallel.DistributedDataParallel(model)

kolo starts (kolo.init()) when the group is made, in the world its launcher gives: MPI under mpirun, kolorun
and srun; Gloo's without them (torchrun, Ray, Kubernetes, MASTER_ADDR/MASTER_PORT).
"""
from kolo import _lifecycle
from kolo._abi import INVALID_ARGUMENT, _C
from kolo._errors import KoloValueError
from kolo._process_sets import global_process_set

NAME = "kolo"


def _create(options, pg_options=None):
    """torch's creator (its extended form, which says the group's job ranks)."""
    import torch
    from kolo.torch.backend._process_group import KoloProcessGroup
    rank, size = options.group_rank, options.group_size
    ranks = list(options.global_ranks_in_group) or list(range(size))
    if not _lifecycle.is_initialized():
        _lifecycle.init()
    if len(ranks) != _C.size() or ranks != list(range(_C.size())):
        if len(options.global_ranks_in_group) == 0:
            raise KoloValueError(
                "init_process_group('kolo') on rank %d: torch's world has %d ranks (this one rank %d: its "
                "launcher's WORLD_SIZE and RANK, or the arguments), kolo's world has %d (this one rank %d)"
                % (_C.rank(), size, rank, _C.size(), _C.rank()), INVALID_ARGUMENT)
        raise KoloValueError(
            "new_group(ranks=%s, backend='kolo') on rank %d: torch makes this group on its members only, and kolo's "
            "process sets are made by every rank. A kolo group of some ranks is made by a kolo default group, to which "
            "torch 2.13 and later hand new_group (this is torch %s); with another default group, a kolo group has "
            "every rank" % (ranks, _C.rank(), torch.__version__), INVALID_ARGUMENT)
    if rank != _C.rank():
        raise KoloValueError("init_process_group('kolo'): torch says this is rank %d (its launcher's RANK, or the "
                             "argument), kolo's world says rank %d" % (rank, _C.rank()), INVALID_ARGUMENT)
    from kolo.torch.backend._new_world import remake_default_group
    _lifecycle.after_recovery(remake_default_group)
    return KoloProcessGroup(rank, size, global_process_set, ranks)


def register():
    """Registers "kolo" with torch.distributed (once; torch's entry point for it calls this too)."""
    import torch
    import torch.distributed as dist
    if int(torch.__version__.split(".")[0]) < 2:
        return  # a Python ProcessGroup needs torch 2.x
    from kolo.torch.backend._launcher_env import export_launcher_ranks
    from kolo.torch.backend._rendezvous import wrap_env_handler
    export_launcher_ranks()
    wrap_env_handler()
    if NAME.upper() in getattr(dist.Backend, "_plugins", {}):
        return
    try:
        dist.Backend.register_backend(NAME, _create, extended_api=True, devices=["cpu", "cuda"])
    except TypeError:  # torch before 2.1 takes no devices
        dist.Backend.register_backend(NAME, _create, extended_api=True)
