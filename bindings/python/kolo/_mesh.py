"""A rank mesh, after Keras' DeviceMesh(shape, axis_names): the job's ranks laid out in an
n-dimensional grid, with a process set per axis and coordinate, so that "my data-parallel group" or
"my model-parallel group" is one call:

    mesh = kolo.mesh(shape=(2, 2), axis_names=("batch", "model"))
    mesh.process_set("batch")    # the ranks that differ from this one along "batch" only

Ranks are laid out host-major: hosts in order, each host's ranks by local rank, filling the grid in
row-major order (the last axis fastest). An inner axis whose span divides the ranks per host thus
stays inside a host, where links are fastest, whatever order mpirun numbered the ranks in.
"""
import itertools

import numpy as np

from kolo import _host, _lifecycle, _process_sets


def layout(shape, places):
    """The grid of job ranks: `places[r]` is rank r's (host index, local rank)."""
    order = sorted(range(len(places)), key=lambda r: (places[r][0], places[r][1], r))
    return np.array(order, dtype=np.int64).reshape(shape)


def lines(grid, axis):
    """Every line of the grid along `axis`: the ranks that differ only in that coordinate, one list per
    combination of the other coordinates, in row-major order of those."""
    moved = np.moveaxis(grid, axis, -1)
    return [list(map(int, moved[index])) for index in itertools.product(*(range(n) for n in moved.shape[:-1]))]


class Mesh:
    """The job's ranks as a grid (see module doc). Made by kolo.mesh(), collectively on every rank."""

    def __init__(self, shape, axis_names):
        shape = tuple(int(n) for n in shape)
        axis_names = tuple(str(a) for a in axis_names)
        size = _lifecycle.size()
        if len(shape) != len(axis_names):
            raise ValueError("mesh: shape %s has %d axes but %d axis names were given %s"
                             % (shape, len(shape), len(axis_names), axis_names))
        if len(set(axis_names)) != len(axis_names):
            raise ValueError("mesh: axis names must differ, got %s" % (axis_names,))
        if any(n < 1 for n in shape) or int(np.prod(shape)) != size:
            raise ValueError("mesh: shape %s holds %d ranks, but the job has %d"
                             % (shape, int(np.prod(shape)) if all(n > 0 for n in shape) else 0, size))
        self.shape, self.axis_names = shape, axis_names
        mine = np.array([[_lifecycle.cross_rank(), _lifecycle.local_rank()]], dtype=np.int64)
        places = _host.allgather([mine], ["kolo.mesh.places"])[0]
        self.ranks = layout(shape, [tuple(p) for p in places.tolist()])
        where = np.argwhere(self.ranks == _lifecycle.rank())[0]
        self.coords = {a: int(c) for a, c in zip(axis_names, where)}
        # Every rank registers every line of every axis, in the same order; a line of the whole job
        # is the global set.
        self._sets = {}
        self._registered = []
        for axis, name in enumerate(axis_names):
            for line in lines(self.ranks, axis):
                if len(line) == size:
                    ps = _process_sets.global_process_set
                else:
                    ps = _process_sets.add_process_set(line)
                    self._registered.append(ps)
                if _lifecycle.rank() in line:
                    self._sets[name] = ps

    def _axis(self, axis):
        if axis not in self.axis_names:
            raise ValueError("mesh has no axis %r (its axes: %s)" % (axis, ", ".join(self.axis_names)))
        return axis

    def process_set(self, axis):
        """This rank's process set along `axis`: the ranks sharing every other coordinate with it."""
        return self._sets[self._axis(axis)]

    def size(self, axis):
        """The mesh's extent along `axis`."""
        return self.shape[self.axis_names.index(self._axis(axis))]

    def coordinate(self, axis):
        """This rank's coordinate along `axis` (its place in process_set(axis))."""
        return self.coords[self._axis(axis)]

    def remove(self):
        """Removes the mesh's process sets (collective over every rank, as making it was)."""
        for ps in self._registered:
            _process_sets.remove_process_set(ps)
        self._registered = []

    def __repr__(self):
        return "Mesh(shape=%s, axis_names=%s, ranks=%s)" % (self.shape, self.axis_names, self.ranks.tolist())


def mesh(shape, axis_names):
    """Lays the job's ranks out in `shape` (host-major) and registers a process set per axis and
    coordinate; collective over every rank. See Mesh."""
    return Mesh(shape, axis_names)
