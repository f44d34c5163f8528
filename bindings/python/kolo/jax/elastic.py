"""Elastic training for JAX, in Horovod's shape (``hvd.elastic``; Horovod itself has none for JAX): run and
JaxState. JAX's arrays are values, not variables: the state holds them as attributes the training loop
replaces (``state.params = new_params``), and commit, restore and sync work on whatever they are then.
See kolo.elastic for how a job survives a failure and takes new hosts.

    state = kolo.jax.elastic.JaxState(params=params, opt_state=opt_state, epoch=0, step=0)

    @kolo.jax.elastic.run
    def train(state):
        while state.step < steps:
            state.params, state.opt_state = train_step(state.params, state.opt_state, batch(state.step))
            state.step += 1
            if state.step % 10 == 0:
                state.commit()
"""
import pickle

import jax
import numpy as np

from kolo import _host_objects, _lifecycle
from kolo._errors import KoloError
from kolo.elastic import HostsUpdatedInterrupt, ObjectState, PeersFailedError, State, run_fn  # noqa: F401 (Horovod's names)
from kolo.jax.collectives import broadcast


def run(func):
    """Decorates a training function whose first argument is a State (see kolo.elastic)."""
    return run_fn(func)


def _is_arrays(value):
    """A pytree whose leaves are all JAX arrays (params, an optimizer's state): kept as arrays."""
    leaves = jax.tree_util.tree_leaves(value)
    return bool(leaves) and all(isinstance(leaf, jax.Array) for leaf in leaves)


class JaxState(ObjectState):
    """Pytrees of JAX arrays (params=..., opt_state=...) and anything else (epoch=0, step=0): commit()
    copies the arrays to host memory, restore() puts them back (on the devices they were on), sync()
    broadcasts them from one rank in one fused call (the rest as pickled objects)."""

    def __init__(self, **kwargs):
        self._array_names = sorted(k for k, v in kwargs.items() if _is_arrays(v))
        for name in self._array_names:
            object.__setattr__(self, name, kwargs.pop(name))
        self._saved_arrays = {}
        super().__init__(bcast_object=_host_objects.broadcast_object, get_rank=_lifecycle.rank, **kwargs)
        self._save_arrays()

    def _save_arrays(self):
        # np.array copies: a later donation or update of the device buffers cannot touch the commit.
        trees = {name: getattr(self, name) for name in self._array_names}
        self._saved_arrays = {name: (jax.tree_util.tree_map(lambda a: np.array(a, copy=True), tree),
                                     jax.tree_util.tree_map(lambda a: a.sharding, tree))
                              for name, tree in trees.items()}

    def _restore_arrays(self):
        for name, (values, shardings) in self._saved_arrays.items():
            object.__setattr__(self, name, jax.tree_util.tree_map(jax.device_put, values, shardings))

    def save(self):
        self._save_arrays()
        super().save()

    def restore(self):
        self._restore_arrays()
        super().restore()

    def sync(self):
        if self._array_names:
            trees = {name: getattr(self, name) for name in self._array_names}
            synced = broadcast(trees, root_rank=self.sync_root_rank, name="elastic.sync")
            for name in self._array_names:
                object.__setattr__(self, name, synced[name])
        self._save_arrays()  # restore() after a sync gives the synced values, as the other states'
        super().sync()

    def serialize(self, file):
        pickle.dump({"arrays": {name: values for name, (values, _) in self._saved_arrays.items()},
                     "attrs": self._saved_state}, file)

    def deserialize(self, payload):
        data = pickle.loads(payload)
        if sorted(data["arrays"]) != self._array_names:
            raise KoloError("kolo.elastic: the commit holds arrays %s, this state %s"
                            % (sorted(data["arrays"]), self._array_names))
        self._saved_arrays = {name: (values, self._saved_arrays[name][1]) for name, values in data["arrays"].items()}
        self._saved_state = data["attrs"]
        self.restore()
