"""kolo.tensorflow's ops: exact results eagerly and inside tf.function for every dtype TensorFlow and
kolo share, uneven allgather, gradients against their formulas, errors naming the tensor on every
rank, process sets, and the helpers."""
import numpy as np
import pytest
import tensorflow as tf

import kolo.tensorflow as kolo
from kolo import build_summary

DTYPES = [tf.uint8, tf.int8, tf.uint16, tf.int16, tf.int32, tf.int64, tf.float16, tf.bfloat16, tf.float32, tf.float64]
MODES = ["eager", "function"]


def run(mode, fn, *args):
    return (tf.function(fn) if mode == "function" else fn)(*args)


def values(rank, dtype, shape=(3, 2)):
    return tf.cast(tf.reshape(tf.range(np.prod(shape)), shape) + rank, dtype)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", DTYPES)
def test_allreduce_sum_min_max_every_dtype(mode, dtype, rank, size):
    x = values(rank, dtype)
    name = "ar.%s.%s" % (mode, dtype.name)

    def step(v):
        return (kolo.allreduce(v, op=kolo.Sum, name=name + ".sum"), kolo.allreduce(v, op=kolo.Min, name=name + ".min"),
                kolo.allreduce(v, op=kolo.Max, name=name + ".max"))

    s, lo, hi = run(mode, step, x)
    base = np.arange(6).reshape(3, 2)
    np.testing.assert_array_equal(s.numpy().astype(np.float64), sum(base + r for r in range(size)))
    np.testing.assert_array_equal(lo.numpy().astype(np.float64), base)
    np.testing.assert_array_equal(hi.numpy().astype(np.float64), base + size - 1)


@pytest.mark.parametrize("mode", MODES)
def test_average_prescale_postscale_and_bools(mode, rank, size):
    def step(v, flags):
        return (kolo.allreduce(v, name="avg." + mode), kolo.allreduce(v, op=kolo.Sum, prescale_factor=0.5,
                                                                      postscale_factor=4.0, name="scaled." + mode),
                kolo.allreduce(flags, op=kolo.Sum, name="or." + mode), kolo.allreduce(flags, op=kolo.Min,
                                                                                        name="and." + mode))

    avg, scaled, any_, all_ = run(mode, step, tf.fill([4], float(rank)), tf.constant([rank == 0, True, False]))
    np.testing.assert_array_equal(avg.numpy(), np.full(4, np.float32(sum(range(size))) * np.float32(1.0 / size)))
    np.testing.assert_array_equal(scaled.numpy(), np.full(4, 2.0 * sum(range(size))))
    assert any_.numpy().tolist() == [True, True, False] and all_.numpy().tolist() == [size == 1, True, False]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("dtype", [tf.uint16, tf.int32, tf.float32, tf.float64, tf.bool])
def test_allgather_uneven_broadcast_alltoall_reducescatter(mode, dtype, rank, size):
    tag = "%s.%s" % (mode, dtype.name)

    def step(rows, v, sendrows):
        gathered = kolo.allgather(rows, name="ag." + tag)
        root = kolo.broadcast(v, root_rank=size - 1, name="bc." + tag)
        received, counts = kolo.alltoall(sendrows, splits=tf.fill([size], 2), name="a2a." + tag)
        return gathered, root, received, counts

    rows = tf.cast(tf.fill([rank + 1, 2], rank + 1), dtype)  # uneven: rank r gives r + 1 rows
    gathered, root, received, counts = run(mode, step, rows, values(rank, dtype),
                                           tf.cast(tf.fill([2 * size, 1], rank), dtype))
    expected = np.concatenate([np.full((r + 1, 2), r + 1) for r in range(size)])
    np.testing.assert_array_equal(gathered.numpy().astype(np.int64), expected.astype(bool) if dtype == tf.bool
                                  else expected)
    np.testing.assert_array_equal(root.numpy(), values(size - 1, dtype).numpy())
    np.testing.assert_array_equal(received.numpy()[:, 0].astype(np.int64),
                                  np.repeat(np.arange(size), 2).astype(bool) if dtype == tf.bool
                                  else np.repeat(np.arange(size), 2))
    assert counts.numpy().tolist() == [2] * size
    if dtype != tf.bool:
        block = run(mode, lambda v: kolo.reducescatter(v, op=kolo.Sum, name="rs." + tag),
                    tf.cast(tf.ones([2 * size + 1, 2]) * (rank + 1), dtype))
        share = 3 if rank == 0 else 2
        np.testing.assert_array_equal(block.numpy(), np.full((share, 2), sum(r + 1 for r in range(size))))


@pytest.mark.parametrize("mode", MODES)
def test_gradients_follow_kolo_torchs_formulas(mode, rank, size):
    x = tf.Variable(tf.fill([2, 3], float(rank + 1)))

    def grads():
        with tf.GradientTape(persistent=True) as tape:
            summed = kolo.allreduce(x * (rank + 1), op=kolo.Sum, name="g.ar." + mode)
            gathered = kolo.allgather(x, name="g.ag." + mode)
            root = kolo.broadcast(x, root_rank=0, name="g.bc." + mode)
            block = kolo.reducescatter(tf.tile(x, [size, 1]), op=kolo.Average, name="g.rs." + mode)
            weights = tf.reshape(tf.range(2 * size * 3, dtype=tf.float32), [2 * size, 3])
            losses = [tf.reduce_sum(summed), tf.reduce_sum(gathered * weights), tf.reduce_sum(root * (rank + 1)),
                      tf.reduce_sum(block)]
        return [tape.gradient(loss, x) for loss in losses]

    g_ar, g_ag, g_bc, g_rs = run(mode, grads)
    # allreduce: the Sum allreduce of the gradients (each rank's is rank + 1).
    np.testing.assert_array_equal(g_ar.numpy(), np.full((2, 3), (rank + 1) * size))
    # allgather: this rank's rows of the gradients averaged over the ranks (all equal here).
    np.testing.assert_array_equal(g_ag.numpy(), np.arange(2 * size * 3).reshape(2 * size, 3)[2 * rank:2 * rank + 2])
    # broadcast: averaged over the ranks at the root, zero elsewhere.
    want = np.float32(sum(r + 1 for r in range(size))) * np.float32(1.0 / size) if rank == 0 else 0.0
    np.testing.assert_array_equal(g_bc.numpy(), np.full((2, 3), want, np.float32))
    # reducescatter (Average, Horovod's formula): the allgather of the blocks' gradients (ones),
    # summed over the tiles.
    np.testing.assert_allclose(g_rs.numpy(), np.full((2, 3), float(size)), rtol=1e-6)


@pytest.mark.parametrize("mode", MODES)
def test_grouped_allreduce_is_one_op_for_mixed_dtypes_and_its_gradient(mode, rank, size):
    x = tf.Variable(tf.fill([2, 3], float(rank + 1)))
    base = np.arange(6).reshape(3, 2)

    def step(a, b, flags):
        with tf.GradientTape() as tape:
            out = kolo.grouped_allreduce([a, b, flags, x * (rank + 1)], op=kolo.Sum, name="grp." + mode)
            loss = tf.reduce_sum(out[3])  # the other outputs have no gradient: zeros go in their place
        return out, tape.gradient(loss, x)

    (a, b, flags, xs), g = run(mode, step, values(rank, tf.int32), values(rank, tf.float64, (4,)),
                               tf.constant([rank == 0, False]))
    np.testing.assert_array_equal(a.numpy(), sum(base + r for r in range(size)))
    np.testing.assert_array_equal(b.numpy(), sum(np.arange(4) + r for r in range(size)))
    assert a.dtype == tf.int32 and b.dtype == tf.float64 and flags.numpy().tolist() == [True, False]
    np.testing.assert_array_equal(xs.numpy(), np.full((2, 3), float(sum((r + 1) ** 2 for r in range(size)))))
    # The gradient is the grouped Sum allreduce of the gradients (each rank's is rank + 1), as allreduce's.
    np.testing.assert_array_equal(g.numpy(), np.full((2, 3), (rank + 1) * size))
    avg = run(mode, lambda v: kolo.grouped_allreduce([v, v * 2], name="grp.avg." + mode), tf.fill([2], float(rank)))
    want = np.float32(sum(range(size))) * np.float32(1.0 / size)
    assert [o.numpy().tolist() for o in avg] == [[want] * 2, [2 * want] * 2]
    assert kolo.grouped_allreduce([], name="grp.empty") == []
    concrete = tf.function(lambda u, v: kolo.grouped_allreduce([u, v], name="grp.graph")).get_concrete_function(
        tf.TensorSpec([2]), tf.TensorSpec([3], tf.int64))
    assert [op.type for op in concrete.graph.get_operations() if op.type.startswith("Kolo")] == ["KoloGroupedAllreduce"]


def test_grouped_allreduce_mismatch_fails_every_rank_naming_the_member(rank, size):
    if size < 2:
        pytest.skip("needs 2 ranks")
    with pytest.raises(tf.errors.OpError, match=r"kolo: .*Mismatched .*shape.* for tensor 'grp.bad.1'"):
        kolo.grouped_allreduce([tf.ones(2), tf.ones(2 + rank)], op=kolo.Sum, name="grp.bad")
    assert kolo.grouped_allreduce([tf.ones(2)], op=kolo.Sum, name="grp.after")[0].numpy().tolist() == [size] * 2


def test_errors_name_the_tensor_on_every_rank(rank, size):
    if size < 2:
        pytest.skip("needs 2 ranks")
    with pytest.raises(tf.errors.OpError, match=r"kolo: .*Mismatched dtype for tensor 'mixed'"):
        kolo.allreduce(tf.ones(2, tf.float32 if rank == 0 else tf.float64), name="mixed")
    with pytest.raises(tf.errors.OpError, match=r"kolo: .*Mismatched .*shape.* for tensor 'shapes'"):
        kolo.allreduce(tf.ones(2 + rank), name="shapes")
    with pytest.raises(kolo.KoloValueError, match=r"allreduce of tensor 'cplx' on rank %d: dtype complex64" % rank):
        kolo.allreduce(tf.ones(2, tf.complex64), name="cplx")
    with pytest.raises(kolo.KoloValueError, match="needs at least one dimension"):
        kolo.allgather(tf.constant(1.0), name="scalar")


def test_process_sets_and_helpers(rank, size):
    if size < 2:
        pytest.skip("needs 2 ranks")
    even, odd = list(range(0, size, 2)), list(range(1, size, 2))
    sets = [kolo.add_process_set(even), kolo.add_process_set(odd)]
    try:
        ps, members = (sets[0], even) if rank % 2 == 0 else (sets[1], odd)
        got = kolo.allreduce(tf.constant([float(rank)]), op=kolo.Sum, name="ps", process_set=ps)
        assert got.numpy().tolist() == [float(sum(members))]
        assert kolo.allgather_object(rank * 10, process_set=ps) == [r * 10 for r in members]
        assert kolo.broadcast_object({"from": rank}, root_rank=members[-1], process_set=ps) == {"from": members[-1]}
        assert int(kolo.size_op(ps.process_set_id)) == len(members) and int(kolo.process_set_included_op(
            sets[1 - rank % 2].process_set_id)) == 0
        kolo.barrier(process_set=ps)
    finally:
        for s in sets:
            kolo.remove_process_set(s)
    assert int(kolo.rank_op()) == rank and int(kolo.size_op()) == size and int(kolo.local_rank_op()) == kolo.local_rank()
    v = [tf.Variable([float(rank)] * 2), tf.Variable(float(rank) * 3)]
    kolo.broadcast_(v, root_rank=0)
    assert v[0].numpy().tolist() == [0.0, 0.0] and float(v[1].numpy()) == 0.0
    assert kolo.gloo_built() == ("[X] Gloo" in build_summary()) and kolo.mpi_built() is True


def test_indexed_slices_stay_sparse(rank, size):
    # An embedding's gradient: every rank's rows gathered, averaged over the ranks.
    slices = tf.IndexedSlices(tf.fill([1, 2], float(rank + 1)), tf.constant([rank % 4]), tf.constant([4, 2]))
    got = kolo.allreduce(slices, name="slices")
    assert isinstance(got, tf.IndexedSlices)
    dense = tf.convert_to_tensor(got).numpy()
    expected = np.zeros((4, 2))
    for r in range(size):
        expected[r % 4] += (r + 1) / size
    np.testing.assert_allclose(dense, expected, rtol=1e-6)


def test_indexed_slices_refuse_what_horovod_refuses_with_its_exception(rank, size):
    # Min/Max/Product/Adasum and scale factors have no sparse meaning here: NotImplementedError, as
    # Horovod raises, before anything is enqueued (so the ranks stay in step).
    slices = tf.IndexedSlices(tf.ones([1, 3]), tf.constant([rank]))
    for op in (kolo.Min, kolo.Max, kolo.Product, kolo.Adasum):
        with pytest.raises(NotImplementedError, match="supports Sum and Average"):
            kolo.allreduce(slices, op=op)
    for scale in ({"prescale_factor": 0.5}, {"postscale_factor": 2.0}):
        with pytest.raises(NotImplementedError, match="prescale_factor or postscale_factor"):
            kolo.allreduce(slices, op=kolo.Sum, **scale)
    with pytest.raises(NotImplementedError):
        kolo.grouped_allreduce([tf.ones([2]), slices], op=kolo.Max)
    assert kolo.allreduce(tf.ones([2]), op=kolo.Sum, name="after.refusals").numpy().tolist() == [size] * 2


def test_ops_in_a_function_run_concurrently_and_always(rank, size):
    # Not chained in program order (so kolo can fuse them), and run even when the result is unused
    # (every rank must submit them): control outputs of the function.
    @tf.function
    def step(a, b):
        kolo.allreduce(b, name="unused.%d" % size)
        return kolo.allreduce(a, name="first"), kolo.allgather(a, name="second")

    concrete = step.get_concrete_function(tf.TensorSpec([2]), tf.TensorSpec([2]))
    ops = [op for op in concrete.graph.get_operations() if op.type.startswith("Kolo")]
    assert sorted(op.type for op in ops) == ["KoloAllgather", "KoloAllreduce", "KoloAllreduce"]
    assert all(not op.control_inputs for op in ops)
    assert {op.name for op in ops} <= {op.name for op in concrete.graph.control_outputs}
    first, second = step(tf.ones(2), tf.ones(2))
    assert first.numpy().tolist() == [1.0, 1.0] and second.shape == (2 * size,)


def test_executing_eagerly_is_there_as_in_horovod():
    # horovod.tensorflow exposes its helper, and scripts (and Horovod's tests) call hvd._executing_eagerly().
    assert kolo._executing_eagerly() is True
    assert tf.function(lambda: tf.constant(kolo._executing_eagerly()))().numpy() == False  # noqa: E712


def test_broadcast_global_variables_in_a_tensorflow_1_graph_and_refused_eagerly(rank, size):
    with pytest.raises(RuntimeError, match="needs a TensorFlow 1 graph"):
        kolo.broadcast_global_variables(0)
    assert kolo.util._executing_eagerly() is True
    graph = tf.Graph()
    with graph.as_default():
        v = tf.compat.v1.Variable([float(rank + 1)] * 3, use_resource=True)
        w = tf.compat.v1.Variable(float(rank) * 2, use_resource=True)
        assert kolo.util._executing_eagerly() is False
        bcast = kolo.broadcast_global_variables(1 if size > 1 else 0)
        with tf.compat.v1.Session(graph=graph) as session:
            session.run(tf.compat.v1.global_variables_initializer())
            session.run(bcast)
            root = 1 if size > 1 else 0
            assert session.run(v).tolist() == [float(root + 1)] * 3 and session.run(w) == float(root) * 2
            # broadcast_ in a graph returns tensors that assign when run, as Horovod's.
            session.run(w.assign(float(rank) * 5))
            got, = kolo.broadcast_([w], root)
            assert session.run(got) == float(root) * 5 and session.run(w) == float(root) * 5


def test_broadcast_global_variables_hook_in_a_monitored_training_session(rank, size):
    root = size - 1
    with tf.Graph().as_default():
        v = tf.compat.v1.Variable([float(rank + 1)] * 2, use_resource=True)
        step = tf.compat.v1.train.get_or_create_global_step()
        train = tf.compat.v1.assign_add(step, 1)
        hook = kolo.BroadcastGlobalVariablesHook(root)
        with tf.compat.v1.train.MonitoredTrainingSession(hooks=[hook]) as session:
            assert session.run(v).tolist() == [float(root + 1)] * 2  # set before the first step
            session.run(train)
