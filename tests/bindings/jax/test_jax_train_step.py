"""A jitted train step with kolo.jax's allreduce inside: on N ranks, each with 1/N of every batch,
it gives the parameters one process gets on the full batches (to 1e-5), step after step."""
import jax
import jax.numpy as jnp
import numpy as np

import kolo.jax as kolo

STEPS, BATCH, LR, MOMENTUM = 10, 24, 0.1, 0.9


def init_params(key):
    k1, k2 = jax.random.split(key)
    return {"hidden": {"w": jax.random.normal(k1, (16, 32)) * 0.3, "b": jnp.zeros(32)},
            "out": {"w": jax.random.normal(k2, (32, 4)) * 0.3, "b": jnp.zeros(4)}}


def loss_fn(params, x, y):
    h = jnp.tanh(x @ params["hidden"]["w"] + params["hidden"]["b"])
    logits = h @ params["out"]["w"] + params["out"]["b"]
    return -jnp.mean(jnp.take_along_axis(jax.nn.log_softmax(logits), y[:, None], axis=1))


def make_step(distributed):
    @jax.jit
    def step(params, velocity, x, y):
        grads = jax.grad(loss_fn)(params, x, y)
        if distributed:
            grads = kolo.allreduce(grads, name="grads")  # the mean over ranks: the full batch's gradient
        velocity = jax.tree_util.tree_map(lambda v, g: MOMENTUM * v + g, velocity, grads)
        params = jax.tree_util.tree_map(lambda p, v: p - LR * v, params, velocity)
        return params, velocity
    return step


def test_ranks_on_shards_match_one_process_on_full_batches(rank, size):
    rng = np.random.default_rng(7)
    data_x = rng.normal(size=(STEPS, BATCH, 16)).astype(np.float32)
    data_y = rng.integers(0, 4, size=(STEPS, BATCH)).astype(np.int32)
    # Each rank starts from its own random weights; rank 0's reach everyone.
    params = kolo.broadcast_variables(init_params(jax.random.PRNGKey(rank)), root_rank=0)
    reference = init_params(jax.random.PRNGKey(0))
    velocity = jax.tree_util.tree_map(jnp.zeros_like, params)
    ref_velocity = jax.tree_util.tree_map(jnp.zeros_like, reference)
    step, ref_step = make_step(True), make_step(False)
    share = BATCH // size
    assert share * size == BATCH
    for i in range(STEPS):
        shard = slice(rank * share, (rank + 1) * share)
        params, velocity = step(params, velocity, data_x[i, shard], data_y[i, shard])
        reference, ref_velocity = ref_step(reference, ref_velocity, data_x[i], data_y[i])
        for got, want in zip(jax.tree_util.tree_leaves(params), jax.tree_util.tree_leaves(reference)):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=1e-5)
    # ... and every rank holds exactly the same parameters.
    gathered = kolo.allgather(jax.tree_util.tree_map(lambda p: p[None], params))
    for leaf in jax.tree_util.tree_leaves(gathered):
        for r in range(1, size):
            np.testing.assert_array_equal(np.asarray(leaf[r]), np.asarray(leaf[0]))
