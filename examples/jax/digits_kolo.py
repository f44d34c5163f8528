"""A custom JAX training loop in the shape of Keras' guide "Writing a training loop from scratch in
JAX" (a jitted train_step over model.stateless_call and optimizer.stateless_apply), data-parallel
with kolo.jax: a small convnet with batch normalization and dropout on scikit-learn's 8x8 digits.

    KERAS_BACKEND=jax kolorun -np 2 .venv/bin/python examples/jax/digits_kolo.py

Each rank takes its share of every batch and the gradients are averaged across ranks inside the
compiled step. The lines marked "kolo" are all that differs from a one-process loop (which this
script also is, run without kolorun).
"""
import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import jax  # noqa: E402
import keras  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import kolo.jax as kolo  # noqa: E402  kolo

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=15)
parser.add_argument("--batch-size", type=int, default=64, help="the global batch, over all ranks")
parser.add_argument("--lr", type=float, default=2e-3)
args = parser.parse_args()
kolo.init()  # kolo

digits = load_digits()
x = (digits.images[..., None] / 16.0).astype(np.float32)
y = digits.target.astype(np.int32)
x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=0)

keras.utils.set_random_seed(0)
model = keras.Sequential([
    keras.Input((8, 8, 1)),
    keras.layers.Conv2D(16, 3, padding="same", use_bias=False),
    keras.layers.BatchNormalization(),
    keras.layers.ReLU(),
    keras.layers.MaxPooling2D(2),
    keras.layers.Flatten(),
    keras.layers.Dropout(0.2),
    keras.layers.Dense(64, activation="relu"),
    keras.layers.Dense(10),
])
loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = keras.optimizers.Adam(args.lr)
optimizer.build(model.trainable_variables)


def compute_loss_and_updates(trainable_variables, non_trainable_variables, x, y):
    logits, non_trainable_variables = model.stateless_call(trainable_variables, non_trainable_variables, x,
                                                           training=True)
    return loss_fn(y, logits), non_trainable_variables


grad_fn = jax.value_and_grad(compute_loss_and_updates, has_aux=True)


@jax.jit
def train_step(state, x, y):
    trainable_variables, non_trainable_variables, optimizer_variables = state
    (loss, non_trainable_variables), grads = grad_fn(trainable_variables, non_trainable_variables, x, y)
    grads = kolo.allreduce(grads, name="grads")  # kolo: the mean gradient over all ranks' shares
    trainable_variables, optimizer_variables = optimizer.stateless_apply(optimizer_variables, grads,
                                                                         trainable_variables)
    return loss, (trainable_variables, non_trainable_variables, optimizer_variables)


@jax.jit
def predict(trainable_variables, non_trainable_variables, x):
    logits, _ = model.stateless_call(trainable_variables, non_trainable_variables, x, training=False)
    return logits.argmax(axis=-1)


state = ([v.value for v in model.trainable_variables], [v.value for v in model.non_trainable_variables],
         [v.value for v in optimizer.variables])
state = kolo.broadcast_variables(state, root_rank=0)  # kolo: every rank starts from rank 0's weights
per_rank = args.batch_size // kolo.size()  # kolo
shard = slice(kolo.rank() * per_rank, (kolo.rank() + 1) * per_rank)  # kolo: this rank's share of a batch

for epoch in range(1, args.epochs + 1):
    order = np.random.default_rng(epoch).permutation(len(x_train))
    losses = []
    for start in range(0, len(order) - args.batch_size + 1, args.batch_size):
        batch = order[start:start + args.batch_size][shard]
        loss, state = train_step(state, x_train[batch], y_train[batch])
        losses.append(loss)
    mean_loss = kolo.allreduce(np.mean(losses, dtype=np.float32))  # kolo: the loss over all ranks
    accuracy = float(np.mean(np.asarray(predict(state[0], state[1], x_test)) == y_test))
    if kolo.rank() == 0:  # kolo
        print("epoch %2d  loss %.4f  test accuracy %.1f%%" % (epoch, float(mean_loss), 100 * accuracy), flush=True)
