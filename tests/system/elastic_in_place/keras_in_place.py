"""A Keras 3 model.fit in Horovod's elastic shape (kolo.keras: DistributedOptimizer, KerasState, the fit
callbacks, elastic.run), for the in-place suite, on the backend KERAS_BACKEND names (TensorFlow or JAX):
float64 least squares on 48 fixed rows, one batch an epoch, each rank fitting an equal share of it, so
that the averaged gradient is the whole batch's at any rank count and the weights after --epochs are
plain gradient descent's, whatever failed. Committed at every epoch's end (CommitStateCallback); with
--kill-at E, rank 2 of 3 SIGKILLs itself as epoch E's batch begins. Every rank prints its pid at the
start and the end; rank 0 saves the weights to --out."""
import os

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("JAX_ENABLE_X64", "1")  # on JAX, floatx float64 alone gives float32 arrays
import keras  # noqa: E402

import kolo.keras as hvd  # noqa: E402

from least_squares import LR, ROWS, data, die_if_due, my_rows, parse_args  # noqa: E402

args = parse_args("--epochs")
hvd.init()
keras.config.set_floatx("float64")
x, y = data()


def squared_error(y_true, y_pred):
    # "mse" for one output, which fit averages over the batch. Not "mse": Keras' JAX backend takes
    # ops.mean of float64 in float32 (its result_type makes 64-bit types 32-bit off TensorFlow), ~1e-9 off.
    return keras.ops.sum(keras.ops.square(y_true - y_pred), axis=-1)


model = keras.Sequential([keras.Input((8,)), keras.layers.Dense(1, use_bias=False, kernel_initializer="zeros")])
model.compile(optimizer=hvd.DistributedOptimizer(keras.optimizers.SGD(LR)), loss=squared_error)


class KillAt(keras.callbacks.Callback):
    def __init__(self, state):
        super().__init__()
        self.state = state

    def on_train_batch_begin(self, batch, logs=None):
        die_if_due(self.state.epoch, args.kill_at, hvd.rank(), hvd.size())


@hvd.elastic.run
def train(state):
    mine = my_rows(hvd.rank(), hvd.size())
    model.fit(x[mine], y[mine], batch_size=ROWS // hvd.size(), epochs=args.epochs - state.epoch, shuffle=False, verbose=0,
              callbacks=[KillAt(state), hvd.elastic.UpdateEpochStateCallback(state),
                         hvd.elastic.CommitStateCallback(state, batches_per_commit=1000)])


print("rank %d of %d starts with pid %d" % (hvd.rank(), hvd.size(), os.getpid()), flush=True)
state = hvd.elastic.KerasState(model, epoch=0)
train(state)
print("rank %d of %d ends with pid %d" % (hvd.rank(), hvd.size(), os.getpid()), flush=True)
if hvd.rank() == 0:
    np.save(args.out, model.get_weights()[0])
    print("ranks %d  epochs %d" % (hvd.size(), state.epoch), flush=True)
