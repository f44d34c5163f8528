"""Picklable Python objects between ranks through kolo's host path (NumPy byte arrays), for bindings
that have no tensors of their own to carry them (kolo.tensorflow, kolo.keras on any backend)."""
import pickle

import numpy as np

from kolo import _core, _host, _process_sets
from kolo._process_sets import global_process_set


def _bytes_array(obj):
    return np.frombuffer(pickle.dumps(obj), dtype=np.uint8)


def broadcast_object(obj, root_rank=0, name=None, process_set=global_process_set):
    """root_rank's `obj` (anything pickle takes) on every rank (of the set)."""
    set_id = _process_sets.set_id(process_set, "broadcast_object")
    name = name or type(obj).__name__
    mine = _bytes_array(obj) if _core.rank() == root_rank else np.zeros(0, np.uint8)
    length = _host.broadcast([np.array([mine.size], np.int64)], ["broadcast_object.%s.size" % name], root_rank,
                             set_id)[0]
    data = mine if _core.rank() == root_rank else np.zeros(int(length[0]), np.uint8)
    data = _host.broadcast([data], ["broadcast_object.%s.data" % name], root_rank, set_id)[0]
    return obj if _core.rank() == root_rank else pickle.loads(data.tobytes())


def allgather_object(obj, name=None, process_set=global_process_set):
    """Every rank's `obj` (anything pickle takes), as a list in the set's rank order."""
    set_id = _process_sets.set_id(process_set, "allgather_object")
    name = name or type(obj).__name__
    mine = _bytes_array(obj)
    sizes = _host.allgather([np.array([mine.size], np.int64)], ["allgather_object.%s.sizes" % name], set_id)[0]
    data = _host.allgather([mine], ["allgather_object.%s.data" % name], set_id)[0]
    out, offset = [], 0
    for n in sizes.tolist():
        out.append(pickle.loads(data[offset:offset + n].tobytes()))
        offset += n
    return out
