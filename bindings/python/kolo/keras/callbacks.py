"""Horovod's Keras callbacks for kolo: the same weights everywhere at the start, metrics averaged
over ranks, and the learning rate warmed up for the larger global batch."""
import numpy as np

import keras

from kolo import _core
from kolo.keras import _backend


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """At the start of training, sets every model and optimizer variable to root_rank's values, so
    that all ranks start from the same weights (however each initialized them)."""

    def __init__(self, root_rank=0):
        super().__init__()
        _backend.require_supported_backend("BroadcastGlobalVariablesCallback")
        self.root_rank = root_rank
        self.broadcast_done = False

    def on_train_begin(self, logs=None):
        if self.broadcast_done:
            return
        variables = list(self.model.variables)
        if self.model.optimizer is not None:
            variables += list(self.model.optimizer.variables)
        values = _backend.broadcast([v.value for v in variables], self.root_rank, "broadcast_global_variables")
        for variable, value in zip(variables, values):
            variable.assign(value)
        self.broadcast_done = True


class MetricAverageCallback(keras.callbacks.Callback):
    """At the end of every epoch, replaces each metric in the logs by its average over the ranks.
    Put it before callbacks that read metrics (checkpoints, ReduceLROnPlateau, ...)."""

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        keys = sorted(k for k, v in logs.items() if np.ndim(v) == 0 and np.issubdtype(np.asarray(v).dtype, np.number))
        if not keys:
            return
        values = np.asarray([logs[k] for k in keys], np.float32)
        averaged = np.asarray(_backend.allreduce(values, "metric_average.%d" % epoch, _core.AVERAGE))
        for key, value in zip(keys, averaged):
            logs[key] = float(value)


class LearningRateWarmupCallback(keras.callbacks.Callback):
    """Raises the learning rate from initial_lr / size to initial_lr over the first warmup_epochs
    epochs, batch by batch (Goyal et al., "Accurate, Large Minibatch SGD"): a large global batch
    starts with the step size of one rank's batch.

    initial_lr: the learning rate after warmup, usually a single rank's rate times size().
    steps_per_epoch: batches per epoch; taken from model.fit's parameters when not given.
    """

    def __init__(self, initial_lr, warmup_epochs=5, steps_per_epoch=None, verbose=0):
        super().__init__()
        if warmup_epochs <= 0:
            raise ValueError("warmup_epochs must be positive, not %r" % (warmup_epochs,))
        self.initial_lr = float(initial_lr)
        self.warmup_epochs = warmup_epochs
        self.steps_per_epoch = steps_per_epoch
        self.verbose = verbose
        self.current_epoch = 0

    def multiplier(self, epoch):
        # Shifted by one batch so that the rate is round at the end of each epoch: initial_lr at
        # the last batch of warmup. Horovod's formula.
        epoch += 1.0 / self.steps_per_epoch
        size = _core.size()
        return 1.0 / size * (epoch * (size - 1) / self.warmup_epochs + 1)

    def on_train_begin(self, logs=None):
        if self.steps_per_epoch is None:
            self.steps_per_epoch = self.params.get("steps")
            if not self.steps_per_epoch:
                raise ValueError("LearningRateWarmupCallback needs steps_per_epoch: model.fit does not know it "
                                 "for this dataset")

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if self.current_epoch >= self.warmup_epochs:
            return
        lr = self.initial_lr * self.multiplier(self.current_epoch + float(batch) / self.steps_per_epoch)
        # On JAX, fit keeps the variables' values in its own state between batches: write that back
        # first, so the new rate goes into the state the next step reads.
        sync = getattr(self.model, "jax_state_sync", None)
        if sync is not None:
            sync()
        self.model.optimizer.learning_rate = lr

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate))
        if epoch == self.warmup_epochs - 1 and self.verbose and _core.rank() == 0:
            print("\nEpoch %d: finished gradual learning rate warmup to %g." % (epoch + 1, self.initial_lr))
