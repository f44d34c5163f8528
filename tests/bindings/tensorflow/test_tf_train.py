"""Horovod's TensorFlow idiom end to end: a tf.function step with DistributedGradientTape, each rank on
its share of the batch, variables broadcast from rank 0 after the first step, trains like one process
on the whole batch; an embedding's IndexedSlices gradients included."""
import numpy as np
import pytest
import tensorflow as tf

import kolo.tensorflow as kolo

STEPS, LR, ROWS_PER_RANK = 10, 0.1, 4


def make_variables(seed):
    g = tf.random.Generator.from_seed(seed)
    return [tf.Variable(g.normal([5, 3]), name="embedding"), tf.Variable(g.normal([3, 8]), name="w1"),
            tf.Variable(tf.zeros([8]), name="b1"), tf.Variable(g.normal([8, 1]), name="w2")]


def loss_fn(variables, ids, y):
    embedding, w1, b1, w2 = variables
    h = tf.nn.relu(tf.matmul(tf.gather(embedding, ids), w1) + b1)  # gather: IndexedSlices gradients
    return tf.reduce_mean((tf.matmul(h, w2) - y) ** 2)


def data(size):
    g = np.random.default_rng(7)
    ids = g.integers(0, 5, size * ROWS_PER_RANK)
    y = g.normal(size=(size * ROWS_PER_RANK, 1)).astype(np.float32)
    return tf.constant(ids), tf.constant(y)


# Horovod's groupings: each gradient alone, num_groups consecutive groups, groups of named variables.
GROUPINGS = {"alone": lambda v: {}, "num_groups": lambda v: {"num_groups": 2},
             "groups": lambda v: {"groups": [[v[3], v[1]]]}}


@pytest.mark.parametrize("grouping", sorted(GROUPINGS))
def test_distributed_gradient_tape_trains_like_one_process(grouping, rank, size):
    ids, y = data(size)
    mine = slice(rank * ROWS_PER_RANK, (rank + 1) * ROWS_PER_RANK)
    variables = make_variables(seed=rank)  # different on every rank until the broadcast
    options = GROUPINGS[grouping](variables)

    @tf.function
    def step(ids, y, first_batch):
        if first_batch:
            # Inside the compiled step: every rank starts from rank 0's weights. (Horovod's guide
            # broadcasts after the first update, which averages gradients taken at different weights
            # once; here the result is exactly one process's.)
            kolo.broadcast_variables(variables, root_rank=0)
        with tf.GradientTape() as tape:
            loss = loss_fn(variables, ids, y)
        tape = kolo.DistributedGradientTape(tape, **options)
        grads = tape.gradient(loss, variables)
        for v, g in zip(variables, grads):
            v.assign_sub(LR * tf.convert_to_tensor(g))
        return loss

    for i in range(STEPS):
        step(ids[mine], y[mine], i == 0)
    graph = step.get_concrete_function(ids[mine], y[mine], False).graph
    ops = sorted(op.type for op in graph.get_operations() if op.type.startswith("Kolo"))
    # The embedding's IndexedSlices travel as two allgathers whatever the grouping; num_groups=2 puts
    # it in the first group with w1 (the group's dense part is one op) and b1, w2 in the second.
    assert ops == {"alone": ["KoloAllgather"] * 2 + ["KoloAllreduce"] * 3,
                   "num_groups": ["KoloAllgather"] * 2 + ["KoloGroupedAllreduce"] * 2,
                   "groups": ["KoloAllgather"] * 2 + ["KoloAllreduce", "KoloGroupedAllreduce"]}[grouping]

    reference = make_variables(seed=0)
    for _ in range(STEPS):
        with tf.GradientTape() as tape:
            loss = loss_fn(reference, ids, y)
        for v, g in zip(reference, tape.gradient(loss, reference)):
            v.assign_sub(LR * tf.convert_to_tensor(g))
    for v, r in zip(variables, reference):
        np.testing.assert_allclose(v.numpy(), r.numpy(), rtol=0, atol=2e-6)
    # Every rank holds the same weights, bit for bit.
    gathered = kolo.allgather(variables[1][None], name="train.w1")
    assert all(np.array_equal(gathered[0].numpy(), g.numpy()) for g in gathered)


def test_sparse_as_dense_and_predivide_and_sum(rank, size):
    variables = make_variables(seed=3)
    ids, y = data(size)
    with tf.GradientTape() as tape:
        loss = loss_fn(variables, ids[rank:rank + 2], y[rank:rank + 2])
    own = tape.gradient(loss, variables)
    with tf.GradientTape() as tape:
        loss = loss_fn(variables, ids[rank:rank + 2], y[rank:rank + 2])
    dense = kolo.DistributedGradientTape(tape, sparse_as_dense=True, gradient_predivide_factor=2.0)
    grads = dense.gradient(loss, variables)
    assert not isinstance(grads[0], tf.IndexedSlices)
    mean = [kolo.allreduce(tf.convert_to_tensor(g), name="ref.%d" % i) for i, g in enumerate(own)]
    for g, m in zip(grads, mean):
        np.testing.assert_allclose(g.numpy(), m.numpy(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("compiled", [False, True], ids=["eager", "tf_function"])
def test_variables_left_unnamed_each_get_their_own_allreduce(compiled, rank, size):
    # tf.Variable's default name is "Variable:0" for every variable: naming the gradients by it alone made the
    # second one "already in flight" on every rank.
    w = tf.Variable(tf.fill([2], float(rank + 1)))
    b = tf.Variable(tf.fill([3], 10.0 * (rank + 1)))
    assert w.name == b.name == "Variable:0"

    def gradients():
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(w * w) + tf.reduce_sum(b)
        return kolo.DistributedGradientTape(tape).gradient(loss, [w, b])

    gw, gb = tf.function(gradients)() if compiled else gradients()
    # d/dw sum(w^2) = 2w = 2(rank + 1), averaged over the ranks: size + 1; d/db sum(b) = 1 on every rank.
    assert gw.numpy().tolist() == [float(size + 1)] * 2
    assert gb.numpy().tolist() == [1.0] * 3
