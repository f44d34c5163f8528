"""Horovod's elastic API for TensorFlow 2 (``hvd.elastic``): run, TensorFlowState, TensorFlowKerasState.
See kolo.elastic for how a job survives a failure and takes new hosts (eager TensorFlow; TensorFlow 1
sessions are not supported here)."""
import tensorflow as tf

from kolo import _lifecycle
from kolo.elastic import HostsUpdatedInterrupt, ObjectState, PeersFailedError, State, run_fn  # noqa: F401 (Horovod's names)
from kolo.elastic.state import VariablesState
from kolo.tensorflow import functions


def run(func):
    """Decorates a training function whose first argument is a State (see kolo.elastic)."""
    return run_fn(func)


class TensorFlowState(VariablesState):
    """Variables and anything else (epoch=0, batch=0): saved by commit(), restored after a failure, synced
    from one rank (sync() also saves, so restore() after it gives the synced values)."""

    def __init__(self, variables=None, session=None, **kwargs):
        if session is not None or not tf.executing_eagerly():
            raise ValueError("kolo.tensorflow.elastic needs eager TensorFlow 2 (no tf.compat.v1 session)")
        self._variables_given = variables
        super().__init__(bcast_object=functions.broadcast_object, get_rank=_lifecycle.rank, **kwargs)

    def _variables(self):
        return list(self._variables_given if self._variables_given is not None else [])

    def _value(self, variable):
        return variable.numpy()

    def _broadcast(self, variables, root_rank):
        functions.broadcast_variables(variables, root_rank=root_rank)


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
