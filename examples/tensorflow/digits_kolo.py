"""A TensorFlow 2 custom training loop in the shape of Horovod's TensorFlow guide (a tf.function step
with hvd.DistributedGradientTape, variables broadcast after the first step, the learning rate scaled
by the number of ranks): a small convnet on scikit-learn's 8x8 digits, data-parallel with
kolo.tensorflow.

    kolorun -np 2 .venv/bin/python examples/tensorflow/digits_kolo.py

Each rank trains on its shard of the training set; the lines marked "kolo" are all that differs from
a one-process loop (which this script also is, run without kolorun).
"""
import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import kolo.tensorflow as hvd  # noqa: E402  kolo

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=15)
parser.add_argument("--batch-size", type=int, default=32, help="per rank")
parser.add_argument("--lr", type=float, default=1e-3)
args = parser.parse_args()
hvd.init()  # kolo

digits = load_digits()
x = (digits.images[..., None] / 16.0).astype(np.float32)
y = digits.target.astype(np.int64)
x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=0)
shard = slice(hvd.rank(), None, hvd.size())  # kolo: this rank's share of the training set
dataset = tf.data.Dataset.from_tensor_slices((x_train[shard], y_train[shard]))

tf.keras.utils.set_random_seed(hvd.rank())  # different on every rank: the broadcast makes them equal
model = tf.keras.Sequential([
    tf.keras.Input((8, 8, 1)),
    tf.keras.layers.Conv2D(16, 3, padding="same", activation="relu"),
    tf.keras.layers.MaxPooling2D(2),
    tf.keras.layers.Flatten(),
    tf.keras.layers.Dense(64, activation="relu"),
    tf.keras.layers.Dense(10),
])
loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
optimizer = tf.keras.optimizers.Adam(args.lr * hvd.size())  # kolo: the rate scaled by the ranks


@tf.function
def training_step(images, labels, first_batch):
    with tf.GradientTape() as tape:
        loss = loss_fn(labels, model(images, training=True))
    tape = hvd.DistributedGradientTape(tape)  # kolo: gradients averaged over the ranks
    grads = tape.gradient(loss, model.trainable_variables)
    optimizer.apply_gradients(zip(grads, model.trainable_variables))
    if first_batch:  # kolo: every rank continues from rank 0's weights and optimizer state
        hvd.broadcast_variables(model.variables, root_rank=0)
        hvd.broadcast_variables(optimizer.variables, root_rank=0)
    return loss


first = True
for epoch in range(args.epochs):
    losses = []
    for images, labels in dataset.shuffle(len(x_train), seed=epoch).batch(args.batch_size):
        losses.append(float(training_step(images, labels, first)))
        first = False
    loss = float(hvd.allreduce(tf.constant(np.mean(losses)), name="epoch_loss"))  # kolo: mean over ranks
    accuracy = float(np.mean(np.argmax(model(x_test, training=False), axis=-1) == y_test))
    if hvd.rank() == 0:  # kolo
        print("epoch %2d  loss %.4f  test accuracy %.1f%%" % (epoch + 1, loss, 100 * accuracy), flush=True)
