"""The convnet of examples/jax/digits_kolo.py trained with model.fit, data-parallel with kolo.keras
(Horovod's Keras API): scikit-learn's 8x8 digits, batch normalization and dropout.

    KERAS_BACKEND=jax kolorun -np 2 .venv/bin/python examples/keras/digits_kolo.py

Each rank fits on its share of every batch; DistributedOptimizer averages the gradients across
ranks inside Keras' compiled train step. The lines marked "kolo" are all that differs from a
one-process model.fit (which this script also is, run without kolorun).
"""
import argparse
import os

os.environ.setdefault("KERAS_BACKEND", "jax")

import keras  # noqa: E402
import numpy as np  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import kolo.keras as kolo  # noqa: E402  kolo

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
# Shuffled once; then each rank keeps its share of every batch, in batch order.
order = np.random.default_rng(0).permutation(len(x_train))
batches = len(order) // args.batch_size
per_rank = args.batch_size // kolo.size()  # kolo
mine = order[:batches * args.batch_size].reshape(batches, kolo.size(), per_rank)[:, kolo.rank()].ravel()  # kolo

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
model.compile(optimizer=kolo.DistributedOptimizer(keras.optimizers.Adam(args.lr)),  # kolo
              loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True), metrics=["accuracy"])
model.fit(x_train[mine], y_train[mine], batch_size=per_rank, epochs=args.epochs, shuffle=False,
          validation_data=(x_test, y_test),
          callbacks=[kolo.BroadcastGlobalVariablesCallback(0), kolo.MetricAverageCallback()],  # kolo
          verbose=2 if kolo.rank() == 0 else 0)  # kolo: one rank prints
