"""broadcast_object and allgather_object (kolo._policy.objects's) over kolo's host path, for bindings that
have no tensors of their own to carry them (kolo.tensorflow, kolo.keras on any backend, kolo.jax)."""
from kolo import _host, _process_sets
from kolo._policy.objects import ObjectCollectives


def _broadcast(array, name, root_rank, process_set):
    return _host.broadcast([array], [name], root_rank, _process_sets.set_id(process_set))[0]


def _allgather(array, name, process_set):
    return _host.allgather([array], [name], _process_sets.set_id(process_set))[0]


_objects = ObjectCollectives(_broadcast, _allgather)
broadcast_object = _objects.broadcast_object
allgather_object = _objects.allgather_object
