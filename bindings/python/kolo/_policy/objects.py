"""Picklable Python objects between ranks (broadcast_object, allgather_object), once for every binding:
each supplies its byte collectives, over its own tensors or kolo's host path. The objects travel as
NumPy uint8 arrays, their lengths first as int64 arrays."""
import pickle

import numpy as np

from kolo import _lifecycle, _process_sets
from kolo._process_sets import global_process_set


def _as_bytes(obj):
    # A writable copy: frameworks that wrap it without copying want to be able to write to it.
    return np.frombuffer(bytearray(pickle.dumps(obj)), dtype=np.uint8)


class ObjectCollectives:
    """broadcast_object and allgather_object over a binding's byte collectives:
    broadcast(array, name, root_rank, process_set) -> root's array (every rank passes one of the same
    shape and dtype); allgather(array, name, process_set) -> every rank's rows, in the set's rank order."""

    def __init__(self, broadcast, allgather):
        self._broadcast = broadcast
        self._allgather = allgather

    def broadcast_object(self, obj, root_rank=0, name=None, process_set=global_process_set):
        """root_rank's `obj` (anything pickle takes) on every rank (of the set)."""
        _process_sets.set_id(process_set, "broadcast_object")  # registered, or a clear error before any op
        name = name or type(obj).__name__
        root = _lifecycle.rank() == root_rank
        mine = _as_bytes(obj) if root else np.zeros(0, np.uint8)
        length = self._broadcast(np.array([mine.size], np.int64), "broadcast_object.%s.size" % name, root_rank,
                                 process_set)
        data = mine if root else np.zeros(int(length[0]), np.uint8)
        data = self._broadcast(data, "broadcast_object.%s.data" % name, root_rank, process_set)
        return obj if root else pickle.loads(np.asarray(data).tobytes())

    def allgather_object(self, obj, name=None, process_set=global_process_set):
        """Every rank's `obj` (anything pickle takes), as a list in the set's rank order."""
        _process_sets.set_id(process_set, "allgather_object")
        name = name or type(obj).__name__
        mine = _as_bytes(obj)
        sizes = self._allgather(np.array([mine.size], np.int64), "allgather_object.%s.sizes" % name, process_set)
        data = np.asarray(self._allgather(mine, "allgather_object.%s.data" % name, process_set))
        out, offset = [], 0
        for n in np.asarray(sizes).tolist():
            out.append(pickle.loads(data[offset:offset + n].tobytes()))
            offset += n
        return out
