"""A TensorFlow 2 training loop in Horovod's elastic shape (kolo.tensorflow: DistributedGradientTape,
TensorFlowState, elastic.run), for the in-place suite: float64 least squares on 48 fixed rows, each rank
taking an equal share of every batch, so that the averaged gradient is the whole batch's at any rank
count and the weights after --steps updates are those of plain gradient descent, whatever failed. A
commit every 4 steps; with --kill-at S, rank 2 of 3 SIGKILLs itself before step S. Every rank prints its
pid at the start and the end; rank 0 saves the weights to --out."""
import os

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

import kolo.tensorflow as hvd  # noqa: E402

from least_squares import COMMIT_EVERY, LR, data, die_if_due, my_rows, parse_args  # noqa: E402

args = parse_args()
hvd.init()
x, y = (tf.constant(a) for a in data())
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
        die_if_due(state.step, args.kill_at, hvd.rank(), hvd.size())
        mine = my_rows(hvd.rank(), hvd.size())
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
