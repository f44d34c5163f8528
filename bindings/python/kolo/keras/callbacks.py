"""Horovod's Keras callbacks for kolo: the same weights everywhere at the start, metrics averaged
over ranks, and the learning rate warmed up for the larger global batch."""
import numpy as np

import keras

from kolo import _lifecycle
from kolo._abi import AVERAGE
from kolo.keras import _backend, functions


class BroadcastGlobalVariablesCallback(keras.callbacks.Callback):
    """At the start of training, sets every model and optimizer variable to root_rank's values, so
    that all ranks start from the same weights (however each initialized them, or after each
    restored its own checkpoint).

    device: accepted for Horovod's scripts (kolo moves each variable where it lives).
    local_variables: a variable or list of variables each rank keeps as it is.
    """

    def __init__(self, root_rank=0, device="", local_variables=None):
        super().__init__()
        _backend.require_supported_backend("BroadcastGlobalVariablesCallback")
        self.root_rank = root_rank
        if local_variables is None:
            local_variables = []
        elif isinstance(local_variables, keras.Variable):
            local_variables = [local_variables]
        else:
            local_variables = list(local_variables)
            if not all(isinstance(v, keras.Variable) for v in local_variables):
                raise ValueError("BroadcastGlobalVariablesCallback: every one of local_variables must be a "
                                 "keras.Variable")
        self.local_variables = local_variables
        self.broadcast_done = False

    def on_train_begin(self, logs=None):
        if self.broadcast_done:
            return
        variables = functions.model_and_optimizer_variables(self.model, excluded=self.local_variables)
        functions.broadcast_variables(variables, self.root_rank, "broadcast_global_variables")
        self.broadcast_done = True


class MetricAverageCallback(keras.callbacks.Callback):
    """At the end of every epoch, replaces each metric in the logs by its average over the ranks.
    Put it before callbacks that read metrics (checkpoints, ReduceLROnPlateau, ...).
    device: accepted for Horovod's scripts."""

    def __init__(self, device=""):
        super().__init__()

    def on_epoch_end(self, epoch, logs=None):
        if not logs:
            return
        keys = sorted(k for k, v in logs.items() if np.ndim(v) == 0 and np.issubdtype(np.asarray(v).dtype, np.number))
        if not keys:
            return
        values = np.asarray([logs[k] for k in keys], np.float32)
        averaged = np.asarray(_backend.allreduce(values, "metric_average.%d" % epoch, AVERAGE))
        for key, value in zip(keys, averaged):
            logs[key] = float(value)


class LearningRateScheduleCallback(keras.callbacks.Callback):
    """Sets the learning rate to initial_lr * multiplier(epoch) from start_epoch up to end_epoch
    (exclusive; None: to the end). multiplier: a function of the epoch, or a number m for
    m ** (epoch - start_epoch). staircase: at the first batch of each epoch, with the whole epoch;
    otherwise at every batch, with epoch + batch / steps_per_epoch (taken from model.fit when not
    given).

    momentum_correction (Goyal et al., "Accurate, Large Minibatch SGD", 2.2): when the rate changes
    from lr to lr', the optimizer's velocity is multiplied by lr' / lr before the step, the update
    then being momentum * (lr'/lr) * v - lr' * g, as if momentum had been scaled for that step (what
    Horovod does). Keras 3 compiles the momentum into the train step as a constant, so kolo scales
    the velocity variables instead: SGD's (plain momentum; with nesterov the look-ahead term keeps
    the unscaled momentum) and RMSprop's. Other optimizers are left alone.
    """

    def __init__(self, initial_lr, multiplier, start_epoch=0, end_epoch=None, staircase=True,
                 momentum_correction=True, steps_per_epoch=None, verbose=0):
        super().__init__()
        if initial_lr is None:
            raise ValueError("Parameter `initial_lr` is required")
        self.initial_lr = float(initial_lr)
        self.start_epoch = start_epoch
        self.end_epoch = end_epoch
        self.staircase = staircase
        self.momentum_correction = momentum_correction
        self.steps_per_epoch = steps_per_epoch
        self.verbose = verbose
        self.current_epoch = 0
        if callable(multiplier):
            self.multiplier = multiplier
        else:
            self.multiplier = lambda epoch, m=float(multiplier): m ** (epoch - start_epoch)

    def on_train_begin(self, logs=None):
        if not self.staircase and not self.steps_per_epoch:
            self.steps_per_epoch = self.params.get("steps")
            if not self.steps_per_epoch:
                raise ValueError("%s needs steps_per_epoch: model.fit does not know it for this dataset"
                                 % type(self).__name__)

    def on_epoch_begin(self, epoch, logs=None):
        self.current_epoch = epoch

    def on_train_batch_begin(self, batch, logs=None):
        if self.current_epoch < self.start_epoch or (self.end_epoch is not None and
                                                     self.current_epoch >= self.end_epoch):
            return
        if self.staircase:
            if batch == 0:
                self._set_rate(self.initial_lr * self.multiplier(self.current_epoch))
        else:
            self._set_rate(self.initial_lr * self.multiplier(self.current_epoch + float(batch) / self.steps_per_epoch))

    def _set_rate(self, lr):
        optimizer = self.model.optimizer
        # On JAX, fit keeps the variables' values in its own state between batches: write that back
        # first, so that what is set here goes into the state the next step reads.
        sync = getattr(self.model, "jax_state_sync", None)
        if sync is not None:
            sync()
        old = float(keras.ops.convert_to_numpy(optimizer.learning_rate))
        optimizer.learning_rate = lr
        if self.momentum_correction and old > 0 and lr != old:
            for velocity in _velocities(optimizer):
                velocity.assign(velocity * (lr / old))

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate))


def _velocities(optimizer):
    """The optimizer's momentum (velocity) variables, where it has momentum."""
    if not getattr(optimizer, "momentum", 0):
        return []
    if isinstance(optimizer, keras.optimizers.SGD):
        return list(getattr(optimizer, "momentums", []))
    if isinstance(optimizer, keras.optimizers.RMSprop):
        return list(getattr(optimizer, "_momentums", []))
    return []


class LearningRateWarmupCallback(LearningRateScheduleCallback):
    """Raises the learning rate from initial_lr / size to initial_lr over the first warmup_epochs
    epochs, batch by batch (Goyal et al., "Accurate, Large Minibatch SGD"): a large global batch
    starts with the step size of one rank's batch. After warmup the rate stays at initial_lr.

    initial_lr: the learning rate after warmup, usually a single rank's rate times size().
    momentum_correction: as in LearningRateScheduleCallback.
    steps_per_epoch: batches per epoch; taken from model.fit's parameters when not given.
    """

    def __init__(self, initial_lr, warmup_epochs=5, momentum_correction=True, steps_per_epoch=None, verbose=0):
        if warmup_epochs <= 0:
            raise ValueError("warmup_epochs must be positive, not %r" % (warmup_epochs,))

        def multiplier(epoch):
            # Shifted by one batch so that the rate is round at the end of each epoch: initial_lr at
            # the last batch of warmup. Horovod's formula.
            epoch += 1.0 / self.steps_per_epoch
            size = _lifecycle.size()
            return 1.0 / size * (epoch * (size - 1) / warmup_epochs + 1)

        super().__init__(initial_lr, multiplier, start_epoch=0, end_epoch=warmup_epochs, staircase=False,
                         momentum_correction=momentum_correction, steps_per_epoch=steps_per_epoch, verbose=verbose)
        self.warmup_epochs = warmup_epochs

    def on_epoch_end(self, epoch, logs=None):
        super().on_epoch_end(epoch, logs)
        if epoch == self.warmup_epochs - 1 and self.verbose and _lifecycle.rank() == 0:
            print("\nEpoch %d: finished gradual learning rate warmup to %g." % (epoch + 1, self.initial_lr))


class BestModelCheckpoint(keras.callbacks.ModelCheckpoint):
    """Keeps the best model seen so far (by `monitor`) in `filepath`, saved by rank 0 alone (every
    rank writing one file would race). Put MetricAverageCallback before it so that the best is judged
    on the metrics of all ranks, which is also what makes every rank agree on it.

    filepath: where to save (.keras); Horovod's form leaves it to be set later (`callback.filepath =
    ...`), which must then happen before training.
    """

    def __init__(self, monitor="val_loss", verbose=0, mode="auto", save_freq="epoch", filepath=None):
        # ModelCheckpoint checks the path's extension at once: a stand-in until the path is known.
        super().__init__(filepath=filepath if filepath is not None else "unset.keras", monitor=monitor,
                         verbose=verbose, save_best_only=True, save_weights_only=False, mode=mode,
                         save_freq=save_freq)
        if filepath is None:
            self.filepath = None

    def on_train_begin(self, logs=None):
        if self.filepath is None:
            raise ValueError("BestModelCheckpoint has no filepath: pass filepath= or set callback.filepath before "
                             "training")
        super().on_train_begin(logs)

    def _save_model(self, epoch, batch, logs):
        if _lifecycle.rank() == 0:
            super()._save_model(epoch, batch, logs)
