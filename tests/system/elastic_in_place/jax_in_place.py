"""A JAX training loop under kolo.jax.elastic (JaxState, elastic.run), for the in-place suite: float64
least squares on 48 fixed rows, the gradient averaged by kolo.jax.allreduce inside the jitted step, each
rank taking an equal share of every batch, so that the averaged gradient is the whole batch's at any rank
count and the weights after --steps updates are those of plain gradient descent, whatever failed. A
commit every 4 steps; with --kill-at S, rank 2 of 3 SIGKILLs itself before step S. Every rank prints its
pid at the start and the end; rank 0 saves the weights to --out."""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
import jax  # noqa: E402

jax.config.update("jax_enable_x64", True)
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import kolo.jax as hvd  # noqa: E402

from least_squares import COMMIT_EVERY, LR, data, die_if_due, my_rows, parse_args  # noqa: E402

args = parse_args()
hvd.init()
x, y = (jnp.asarray(a) for a in data())


@jax.jit
def step(w, xs, ys):
    grad = jax.grad(lambda w: jnp.mean((xs @ w - ys) ** 2))(w)
    return w - LR * hvd.allreduce(grad, name="grad")


@hvd.elastic.run
def train(state):
    while state.step < args.steps:
        die_if_due(state.step, args.kill_at, hvd.rank(), hvd.size())
        mine = my_rows(hvd.rank(), hvd.size())
        state.w = step(state.w, x[mine], y[mine])
        state.step += 1
        if state.step % COMMIT_EVERY == 0:
            state.commit()


print("rank %d of %d starts with pid %d" % (hvd.rank(), hvd.size(), os.getpid()), flush=True)
state = hvd.elastic.JaxState(w=jnp.zeros((8, 1)), step=0)
train(state)
print("rank %d of %d ends with pid %d" % (hvd.rank(), hvd.size(), os.getpid()), flush=True)
if hvd.rank() == 0:
    np.save(args.out, np.asarray(state.w))
    print("ranks %d  steps %d" % (hvd.size(), state.step), flush=True)
