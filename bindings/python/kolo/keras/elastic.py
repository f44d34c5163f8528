"""Horovod's elastic API for Keras (``hvd.elastic`` of horovod.keras / horovod.tensorflow.keras): run,
KerasState and the model.fit callbacks that keep it (CommitStateCallback, UpdateBatchStateCallback,
UpdateEpochStateCallback), on any Keras 3 backend. See kolo.elastic for how a job survives a failure."""
import keras

from kolo import _host_objects, _lifecycle
from kolo.elastic import HostsUpdatedInterrupt, ObjectState, PeersFailedError, State, run_fn  # noqa: F401 (Horovod's names)
from kolo.elastic.state import VariablesState
from kolo.keras import functions


def run(func):
    """Decorates a training function whose first argument is a State (see kolo.elastic)."""
    return run_fn(func)


class KerasState(VariablesState):
    """A Keras model, its optimizer (the variables it has built) and anything else (epoch=0, batch=0):
    saved by commit(), restored after a failure, synced from one rank (sync also saves)."""

    def __init__(self, model, optimizer=None, **kwargs):
        self.model = model
        self.optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
        kwargs.setdefault("epoch", 0)
        kwargs.setdefault("batch", 0)
        super().__init__(bcast_object=_host_objects.broadcast_object, get_rank=_lifecycle.rank, **kwargs)

    def _variables(self):
        return functions.model_and_optimizer_variables(self.model, optimizer=self.optimizer)

    def _save_values(self):
        # On JAX, fit keeps the variables' values in its own state between batches: write it back first.
        sync = getattr(self.model, "jax_state_sync", None)
        if sync is not None:
            sync()
        super()._save_values()

    def _value(self, variable):
        return keras.ops.convert_to_numpy(variable.value)

    def _broadcast(self, variables, root_rank):
        functions.broadcast_variables(variables, root_rank=root_rank, name="elastic.sync")


class CommitStateCallback(keras.callbacks.Callback):
    """Commits the state every `batches_per_commit` batches and at the end of each epoch."""

    def __init__(self, state, batches_per_commit=1):
        super().__init__()
        self.state = state
        self.batches_per_commit = batches_per_commit
        self.batches_remaining = batches_per_commit

    def on_train_begin(self, logs=None):
        self.batches_remaining = self.batches_per_commit  # the same count on every rank after a reset

    def on_train_batch_end(self, batch, logs=None):
        self.batches_remaining -= 1
        if self.batches_remaining == 0:
            self.state.commit()
            self.batches_remaining = self.batches_per_commit

    def on_epoch_end(self, epoch, logs=None):
        self.state.commit()


class UpdateBatchStateCallback(keras.callbacks.Callback):
    """Keeps `state.batch` at the batch just done (0 at an epoch's end)."""

    def __init__(self, state):
        super().__init__()
        self.state = state

    def on_train_batch_end(self, batch, logs=None):
        self.state.batch = batch

    def on_epoch_end(self, epoch, logs=None):
        self.state.batch = 0


class UpdateEpochStateCallback(keras.callbacks.Callback):
    """Keeps `state.epoch` counting across resets (Keras numbers each fit's epochs from 0)."""

    def __init__(self, state):
        super().__init__()
        self.state = state
        self.initial_epoch = state.epoch

    def on_train_begin(self, logs=None):
        self.initial_epoch = self.state.epoch

    def on_epoch_end(self, epoch, logs=None):
        self.state.epoch = self.initial_epoch + epoch + 1
