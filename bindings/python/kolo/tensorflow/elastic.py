"""Horovod's elastic API for TensorFlow 2 (``hvd.elastic``): run, TensorFlowState, TensorFlowKerasState.
See kolo.elastic for how a job survives a failure and takes new hosts (eager TensorFlow; TensorFlow 1
sessions are not supported here)."""
import pickle

import tensorflow as tf

from kolo import _core
from kolo.elastic import HostsUpdatedInterrupt, ObjectState, State, run_fn  # noqa: F401 (Horovod's names)
from kolo.tensorflow import functions


def run(func):
    """Decorates a training function whose first argument is a State (see kolo.elastic)."""
    return run_fn(func, _reset)


def _reset():
    _core.shutdown()
    _core.init()


class TensorFlowState(ObjectState):
    """Variables and anything else (epoch=0, batch=0): saved by commit(), restored after a failure, synced
    from one rank (sync() also saves, so restore() after it gives the synced values)."""

    def __init__(self, variables=None, session=None, **kwargs):
        if session is not None or not tf.executing_eagerly():
            raise ValueError("kolo.tensorflow.elastic needs eager TensorFlow 2 (no tf.compat.v1 session)")
        self._variables_given = variables
        self._saved = []
        super().__init__(bcast_object=functions.broadcast_object, get_rank=_core.rank, **kwargs)
        self._save_values()

    def _variables(self):
        return list(self._variables_given if self._variables_given is not None else [])

    def _save_values(self):
        # (variable, value) pairs: variables made later (an optimizer's, once it builds) join at the next save.
        self._saved = [(v, v.numpy()) for v in self._variables()]

    def save(self):
        self._save_values()
        super().save()

    def restore(self):
        for v, value in self._saved:
            v.assign(value)
        super().restore()

    def sync(self):
        variables = self._variables()
        if variables:
            functions.broadcast_variables(variables, root_rank=self.sync_root_rank)
        self._save_values()
        super().sync()

    def serialize(self, file):
        pickle.dump({"values": [value for _, value in self._saved], "attrs": self._saved_state}, file)

    def deserialize(self, payload):
        data = pickle.loads(payload)
        variables = self._variables()
        if len(variables) != len(data["values"]):
            raise _core.KoloError("kolo.elastic: the commit has %d variables, this state %d"
                                  % (len(data["values"]), len(variables)))
        self._saved = list(zip(variables, data["values"]))
        self._saved_state = data["attrs"]
        self.restore()


class TensorFlowKerasState(TensorFlowState):
    """A Keras model and its optimizer (their variables, the optimizer's as soon as it has built them),
    and anything else."""

    def __init__(self, model, optimizer=None, backward_passes_per_step=1, **kwargs):
        self.model = model
        self.optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        super().__init__(variables=None, **kwargs)

    def _variables(self):
        variables = list(self.model.variables)
        if self.optimizer is not None:
            variables += list(getattr(self.optimizer, "variables", []))
        return variables
