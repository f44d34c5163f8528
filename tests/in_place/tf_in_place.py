"""A TensorFlow 2 training loop in Horovod's elastic shape (kolo.tensorflow: DistributedGradientTape,
TensorFlowState, elastic.run), for the in-place suite: float64 least squares on 48 fixed rows, each rank
taking an equal share of every batch, so that the averaged gradient is the whole batch's at any rank
count and the weights after --steps updates are those of plain gradient descent, whatever failed. A
commit every 4 steps; with --kill-at S, rank 2 of 3 SIGKILLs itself before step S. Every rank prints its
pid at the start and the end; rank 0 saves the weights to --out."""
import argparse
import os
import signal

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

import kolo.tensorflow as hvd  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--steps", type=int, default=30)
parser.add_argument("--kill-at", type=int, default=-1)
parser.add_argument("--out", required=True)
args = parser.parse_args()
ROWS, LR, COMMIT_EVERY = 48, 0.05, 4

hvd.init()
rng = np.random.default_rng(0)
x = tf.constant(rng.normal(size=(ROWS, 8)))
y = tf.constant(rng.normal(size=(ROWS, 1)))
w = tf.Variable(tf.zeros([8, 1], tf.float64), name="w")


@tf.function
def step(xs, ys):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((xs @ w - ys) ** 2)
    (g,) = hvd.DistributedGradientTape(tape).gradient(loss, [w])
    w.assign_sub(LR * g)


@hvd.elastic.run
def train(state):
    while state.step < args.steps:
        if state.step == args.kill_at and hvd.size() == 3 and hvd.rank() == 2:
            os.kill(os.getpid(), signal.SIGKILL)
        share = ROWS // hvd.size()
        mine = slice(hvd.rank() * share, (hvd.rank() + 1) * share)
        step(x[mine], y[mine])
        state.step += 1
        if state.step % COMMIT_EVERY == 0:
            state.commit()


print("rank %d of %d starts with pid %d" % (hvd.rank(), hvd.size(), os.getpid()), flush=True)
state = hvd.elastic.TensorFlowState([w], step=0)
train(state)
print("rank %d of %d ends with pid %d" % (hvd.rank(), hvd.size(), os.getpid()), flush=True)
if hvd.rank() == 0:
    np.save(args.out, w.numpy())
    print("ranks %d  steps %d" % (hvd.size(), state.step), flush=True)
