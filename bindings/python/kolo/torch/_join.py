"""barrier and join: waiting for the other ranks, with no tensor of this rank's to move."""
from kolo._abi import _C
from kolo._process_sets import global_process_set
from kolo._process_sets import set_id as _set_id
from kolo.torch._handles import _handles


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
