"""barrier and join: waiting for the other ranks, with no tensor of this rank's to move."""
import gc
import weakref

from kolo._abi import _C
from kolo._process_sets import global_process_set
from kolo._process_sets import set_id as _set_id
from kolo.torch._handles import _handles


def barrier(process_set=global_process_set):
    """Returns once every rank (of the process set) has called barrier()."""
    _handles.synchronize(_handles.add(_C.barrier_async(_set_id(process_set, "barrier")), (), lambda _: None))


# Sharded optimizers (zero_optimizer.py): a rank that joins must go on stepping its shard of their state.
sharded_optimizers = weakref.WeakSet()


def join(device=-1):
    """This rank has no more data: until every rank has joined, it takes part in the others'
    allreduces (contributing zeros; an Average divides by every rank, as in Horovod, unless
    KOLO_JOIN_AVERAGE=contributors), allgathers (no
    rows), broadcasts and barriers. Returns the last rank to join. `device` is accepted for
    Horovod compatibility. With a sharded optimizer (DistributedOptimizer(zero_stage=1|2)), it
    first takes part in the others' steps, with zero gradients, stepping its own shard."""
    if sharded_optimizers:
        gc.collect()  # a sharded optimizer dropped by the script is held by its hooks' cycle until collected
    reducing = [opt for opt in list(sharded_optimizers) if opt._reducing]
    if len(reducing) > 1:
        raise ValueError("join() with %d sharded optimizers (DistributedOptimizer(zero_stage=1|2)): a joined rank "
                         "steps the shards of one only" % len(reducing))
    for opt in reducing:
        opt._join_steps()
    return _handles.synchronize(_handles.add(_C.join_async(), (), lambda out: out.last_joined_rank))
