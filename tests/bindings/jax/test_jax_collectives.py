"""kolo.jax's collectives on pytrees of float32, bfloat16 and int32 (and the other dtypes), inside
jax.jit and outside it, with exact expected values; mismatches fail on every rank."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import kolo.jax as kolo

DTYPES = [jnp.float32, jnp.bfloat16, jnp.int32]
ALL_DTYPES = [jnp.uint8, jnp.int8, jnp.int32, jnp.float16, jnp.bfloat16, jnp.float32]


def in_and_out_of_jit(fn):
    """Runs fn eagerly and compiled; both results must agree."""
    return [fn, jax.jit(fn)]


def tree_for(rank, dtype):
    # Small integers: every sum, min, max and average below is exact in every dtype.
    return {"w": jnp.full((3, 2), rank + 1, dtype), "b": [jnp.arange(4, dtype=dtype) + rank, jnp.asarray(rank, dtype)]}


def assert_tree_equal(actual, expected):
    assert jax.tree_util.tree_structure(actual) == jax.tree_util.tree_structure(expected)
    for a, e in zip(jax.tree_util.tree_leaves(actual), jax.tree_util.tree_leaves(expected)):
        assert a.dtype == e.dtype and a.shape == e.shape
        np.testing.assert_array_equal(np.asarray(a, np.float64), np.asarray(e, np.float64))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("jit", [False, True])
def test_allreduce_sum_min_max(rank, size, dtype, jit):
    ranks = np.arange(size)
    for op, w, b0, b1 in [(kolo.Sum, (ranks + 1).sum(), ranks.sum(), ranks.sum()),
                          (kolo.Min, 1, 0, 0), (kolo.Max, size, size - 1, size - 1)]:
        fn = lambda t, op=op: kolo.allreduce(t, op=op)  # noqa: E731
        out = (jax.jit(fn) if jit else fn)(tree_for(rank, dtype))
        scale = size if op == kolo.Sum else 1
        expected = {"w": jnp.full((3, 2), w, dtype), "b": [jnp.arange(4, dtype=dtype) * scale + b0, jnp.asarray(b1, dtype)]}
        assert_tree_equal(out, expected)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("jit", [False, True])
def test_allreduce_average(rank, size, dtype, jit):
    fn = kolo.allreduce  # Average is the default
    out = (jax.jit(fn) if jit else fn)(tree_for(rank, dtype))
    total = np.arange(size).sum()
    if jnp.issubdtype(dtype, jnp.integer):
        w, b, s = (total + size) // size, np.arange(4) + total // size, total // size  # integers truncate
    else:
        w, b, s = (total + size) / size, np.arange(4) + total / size, total / size
    assert_tree_equal(out, {"w": jnp.full((3, 2), w, dtype), "b": [jnp.asarray(b, dtype), jnp.asarray(s, dtype)]})


@pytest.mark.parametrize("dtype", ALL_DTYPES)
def test_allreduce_every_dtype(rank, size, dtype):
    out = jax.jit(lambda x: kolo.allreduce(x, op=kolo.Sum))(jnp.full((5,), rank + 1, dtype))
    assert_tree_equal(out, jnp.full((5,), size * (size + 1) // 2, dtype))


def test_allreduce_scaling(rank, size):
    x = jnp.full((4,), float(rank + 1), jnp.float32)
    out = jax.jit(lambda t: kolo.allreduce(t, op=kolo.Sum, prescale_factor=2.0, postscale_factor=0.5))(x)
    assert_tree_equal(out, jnp.full((4,), float(size * (size + 1) // 2), jnp.float32))


def test_allreduce_names_a_leaf_by_its_path(rank, size):
    grads = {"dense": {"kernel": jnp.ones((2, 2)), "bias": jnp.ones((2 + (rank if size > 1 else 0),))}}
    if size == 1:
        pytest.skip("a mismatch needs two ranks")
    with pytest.raises(kolo.KoloError) as e:
        kolo.allreduce(grads, name="grads")
    assert "Mismatched shape for tensor 'grads['dense']['bias']'" in str(e.value)


@pytest.mark.parametrize("dtype", DTYPES)
def test_allgather_different_rows_outside_jit(rank, size, dtype):
    tree = {"x": jnp.full((rank + 1, 2), rank, dtype), "y": jnp.arange(rank + 2, dtype=dtype)}
    out = kolo.allgather(tree)
    xs = np.concatenate([np.full((r + 1, 2), r) for r in range(size)])
    ys = np.concatenate([np.arange(r + 2) for r in range(size)])
    assert_tree_equal(out, {"x": jnp.asarray(xs, dtype), "y": jnp.asarray(ys, dtype)})


@pytest.mark.parametrize("dtype", DTYPES)
def test_allgather_inside_jit(rank, size, dtype):
    out = jax.jit(kolo.allgather)([jnp.full((2, 3), rank, dtype)])
    assert_tree_equal(out, [jnp.asarray(np.repeat(np.arange(size), 2)[:, None] * np.ones((1, 3)), dtype)])


def test_allgather_inside_jit_needs_equal_rows(rank, size):
    if size == 1:
        pytest.skip("needs two ranks")
    with pytest.raises(jax.errors.JaxRuntimeError) as e:
        jax.block_until_ready(jax.jit(lambda x: kolo.allgather(x, name="rows"))(jnp.ones((rank + 1, 2))))
    rows = ", ".join("%d on rank %d" % (r + 1, r) for r in range(size))
    assert "allgather of tensor 'rows' inside jit: the ranks gave different first dimensions (" + rows in str(e.value)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("jit", [False, True])
def test_broadcast_from_every_root(rank, size, dtype, jit):
    for root in range(size):
        fn = lambda t, root=root: kolo.broadcast(t, root_rank=root)  # noqa: E731
        out = (jax.jit(fn) if jit else fn)(tree_for(rank, dtype))
        assert_tree_equal(out, tree_for(root, dtype))


def test_broadcast_variables(rank):
    params = {"w": jnp.full((2, 2), float(rank)), "step": jnp.asarray(rank, jnp.int32)}
    assert_tree_equal(kolo.broadcast_variables(params, root_rank=0),
                      {"w": jnp.zeros((2, 2)), "step": jnp.asarray(0, jnp.int32)})


@pytest.mark.parametrize("jit", [False, True])
def test_mismatched_shape_fails_on_every_rank(rank, size, jit):
    if size == 1:
        pytest.skip("a mismatch needs two ranks")
    fn = lambda t: kolo.allreduce(t, name="mismatch")  # noqa: E731
    error = kolo.KoloError if not jit else jax.errors.JaxRuntimeError
    with pytest.raises(error) as e:
        jax.block_until_ready((jax.jit(fn) if jit else fn)(jnp.ones((3 + rank,))))
    shapes = ", ".join("[%d] on rank %d" % (3 + r, r) for r in range(size))
    assert "Mismatched shape for tensor 'mismatch' (allreduce): " + shapes in str(e.value)
    # kolo goes on working afterwards.
    assert_tree_equal(kolo.allreduce(jnp.ones(2), op=kolo.Sum), jnp.full((2,), float(size)))


def test_mismatched_dtype_fails_on_every_rank(rank, size):
    if size == 1:
        pytest.skip("a mismatch needs two ranks")
    with pytest.raises(kolo.KoloError) as e:
        kolo.allreduce(jnp.ones(3, jnp.float32 if rank == 0 else jnp.int32), name="dtypes")
    others = "rank 1" if size == 2 else "ranks 1-%d" % (size - 1)
    assert str(e.value) == "Mismatched dtype for tensor 'dtypes' (allreduce): float32 on rank 0, int32 on %s." % others


def test_bad_input_raises_at_once_naming_tensor_and_rank(rank):
    with pytest.raises(kolo.KoloValueError) as e:
        kolo.allreduce({"seed": jnp.ones(3, jnp.uint32)}, name="t")
    assert str(e.value).startswith("tensor 't['seed']' on rank %d: input has dtype uint32; kolo supports" % rank)
    with pytest.raises(kolo.KoloValueError, match="do not apply to bool tensors"):
        kolo.allreduce(jnp.ones(3, bool), prescale_factor=2.0)
    with pytest.raises(kolo.KoloValueError, match="at least one dimension"):
        kolo.allgather(jnp.float32(1.0))
    with pytest.raises(kolo.KoloValueError, match="root_rank 99 is not a rank"):
        kolo.broadcast(jnp.ones(2), root_rank=99)


@pytest.mark.parametrize("jit", [False, True])
def test_int16_uint16_and_bool_reduce_as_in_horovod(rank, size, jit):
    tree = {"tokens": jnp.asarray([rank, -2, 1000], jnp.int16), "mask": jnp.asarray([rank == 0, True, False]),
            "counts": jnp.asarray([60000 + rank, 1], jnp.uint16)}
    total = (jax.jit(lambda t: kolo.allreduce(t, op=kolo.Sum, name="i16.bool")) if jit else
             (lambda t: kolo.allreduce(t, op=kolo.Sum, name="i16.bool")))(tree)
    wrapped = sum(60000 + r for r in range(size)) % 65536  # uint16 sums wrap, as MPI_UINT16_T's do
    assert_tree_equal(total, {"tokens": jnp.asarray([size * (size - 1) // 2, -2 * size, 1000 * size], jnp.int16),
                              "mask": jnp.asarray([True, True, False]),  # Sum of bools: or
                              "counts": jnp.asarray([wrapped, size], jnp.uint16)})
    lowest = kolo.allreduce(tree["counts"], op=kolo.Min, name="u16.min")
    assert_tree_equal(lowest, jnp.asarray([60000, 1], jnp.uint16))
    both = kolo.allreduce(tree["mask"], op=kolo.Min, name="bool.and")
    assert_tree_equal(both, jnp.asarray([size == 1, True, False]))
    scaled = kolo.allreduce(jnp.asarray([3, -3], jnp.int32), op=kolo.Sum, prescale_factor=0.5, name="int.scaled")
    assert_tree_equal(scaled, jnp.asarray([size, -size], jnp.int32))  # 1.5 and -1.5 truncate toward zero


def test_empty_tree_and_scalars(rank, size):
    assert kolo.allreduce({}) == {}
    assert_tree_equal(kolo.allreduce(jnp.float32(rank), op=kolo.Max), jnp.float32(size - 1))
    kolo.barrier()


@pytest.mark.parametrize("jit", [False, True])
def test_broadcast_and_allgather_carry_other_dtypes_as_bits(rank, size, jit):
    # Keras keeps its seed generators' state in uint32; masks are bool.
    tree = tree_at(rank)
    out = (jax.jit(kolo.broadcast, static_argnums=1) if jit else kolo.broadcast)(tree, 0)
    assert_tree_equal(out, tree_at(0))
    gathered = (jax.jit(kolo.allgather) if jit else kolo.allgather)(tree)
    expected = {k: jnp.concatenate([tree_at(r)[k] for r in range(size)]) for k in tree}
    assert_tree_equal(gathered, expected)
    with pytest.raises(kolo.KoloValueError, match="input has dtype uint32"):
        kolo.allreduce(tree["seed"])


def tree_at(rank):
    # uint64 needs jax's x64 mode, off by default: without it the same width is int32 bits.
    return {"seed": jnp.asarray([2**32 - 1 - rank, rank], jnp.uint32), "mask": jnp.asarray([rank % 2 == 0, True]),
            "tokens": jnp.asarray([-3 - rank, 7], jnp.int16), "small": jnp.asarray([200 + rank], jnp.uint16)}


@pytest.mark.parametrize("jit", [False, True])
def test_inputs_stay_as_they_were(rank, size, jit):
    # Results may take their input's buffer inside a compiled step; an array the caller still
    # holds is copied first, never overwritten.
    x = {"a": jnp.full((1000,), float(rank + 1)), "b": jnp.full((3,), rank, jnp.int32)}
    out = (jax.jit(lambda t: kolo.allreduce(t, op=kolo.Sum)) if jit else lambda t: kolo.allreduce(t, op=kolo.Sum))(x)
    out2 = (jax.jit(lambda t: kolo.broadcast(t, 0)) if jit else lambda t: kolo.broadcast(t, 0))(x)
    assert_tree_equal(x, {"a": jnp.full((1000,), float(rank + 1)), "b": jnp.full((3,), rank, jnp.int32)})
    assert_tree_equal(out, {"a": jnp.full((1000,), float(size * (size + 1) // 2)),
                            "b": jnp.full((3,), size * (size - 1) // 2, jnp.int32)})
    assert_tree_equal(out2, {"a": jnp.full((1000,), 1.0), "b": jnp.zeros((3,), jnp.int32)})


@pytest.mark.parametrize("jit", [False, True])
def test_allreduce_gradient_is_the_allreduce_of_the_gradients(rank, size, jit):
    # Each rank's loss weighs the reduced values by (rank + 1); the gradient on every rank is the
    # same reduction of all ranks' weights: Sum gives sum(r + 1), Average that over size. The
    # integer leaf has no gradient (and gets none).
    def loss(x, op):
        y = kolo.allreduce({"x": x, "step": jnp.int32(1)}, op=op, name="ad.%d" % op)
        scaled = kolo.allreduce(x, op=op, name="ad.scaled.%d" % op, prescale_factor=2.0, postscale_factor=0.25)
        return jnp.sum(y["x"] * (rank + 1)) + jnp.sum(scaled * (rank + 1))
    x = jnp.arange(3, dtype=jnp.float32)
    total = size * (size + 1) / 2
    for op, expected in [(kolo.Sum, 1.5 * total), (kolo.Average, 1.5 * total / size)]:
        grad = jax.grad(loss)
        g = (jax.jit(grad, static_argnums=1) if jit else grad)(x, op)
        assert_tree_equal(g, jnp.full((3,), expected, jnp.float32))
    with pytest.raises(NotImplementedError, match="kolo differentiates Sum and Average allreduces, not Max"):
        jax.grad(lambda v: jnp.sum(kolo.allreduce(v, op=kolo.Max, name="ad.max")))(x)


def my_block(total, rank, size):
    """This rank's rows of a reducescatter: the first total % size ranks hold one more."""
    counts = [total // size + (r < total % size) for r in range(size)]
    start = sum(counts[:rank])
    return start, start + counts[rank]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("jit", [False, True])
def test_reducescatter_sum_and_average_uneven_rows(rank, size, dtype, jit):
    # 5 rows: uneven blocks at 2 and 3 ranks.
    tree = {"x": jnp.asarray(np.arange(10).reshape(5, 2) + 2 * rank, dtype), "y": jnp.full((7,), rank + 1, dtype)}
    total_x = size * np.arange(10).reshape(5, 2) + 2 * sum(range(size))
    total_y = np.full((7,), sum(r + 1 for r in range(size)))
    bx, by = my_block(5, rank, size), my_block(7, rank, size)
    for op, divide in ((kolo.Sum, 1), (kolo.Average, size)):
        fn = lambda t, op=op: kolo.reducescatter(t, op=op, name="rs.%d" % op)  # noqa: E731
        out = (jax.jit(fn) if jit else fn)(tree)
        # Integers average by truncating division, as elsewhere in kolo.
        expect = {"x": total_x[bx[0]:bx[1]] // divide if dtype == jnp.int32 else total_x[bx[0]:bx[1]] / divide,
                  "y": total_y[by[0]:by[1]] // divide if dtype == jnp.int32 else total_y[by[0]:by[1]] / divide}
        assert_tree_equal(out, {k: jnp.asarray(v, dtype) for k, v in expect.items()})


def test_reducescatter_scaling_and_errors(rank, size):
    out = kolo.reducescatter(jnp.ones((size * 2, 3)), op=kolo.Sum, prescale_factor=2.0, postscale_factor=0.25)
    assert_tree_equal(out, jnp.full((2, 3), size * 0.5, jnp.float32))
    with pytest.raises(kolo.KoloValueError, match="tensor 'scalar' on rank %d: reducescatter needs at least one "
                                                  "dimension" % rank):
        kolo.reducescatter(jnp.float32(1.0), name="scalar")
    with pytest.raises(kolo.KoloValueError, match="reducescatter reduces with Average or Sum"):
        kolo.reducescatter(jnp.ones((2,)), op=kolo.Max, name="max")


@pytest.mark.parametrize("jit", [False, True])
def test_reducescatter_gradient_gathers_the_blocks_gradients(rank, size, jit):
    # loss on rank r: sum of (its block * (r + 1)). d/dx of the total over ranks: row i gets the weight
    # of the rank holding i, divided by size for Average.
    x = jnp.arange(10, dtype=jnp.float32).reshape(5, 2)
    for op, divide in ((kolo.Sum, 1.0), (kolo.Average, float(size))):
        def loss(v, op=op):
            return jnp.sum(kolo.reducescatter(v, op=op, name="ad.rs.%d" % op, prescale_factor=3.0) * (rank + 1))
        grad = jax.grad(loss)
        g = (jax.jit(grad) if jit else grad)(x)
        weights = np.concatenate([np.full(my_block(5, r, size)[1] - my_block(5, r, size)[0], r + 1.0)
                                  for r in range(size)])
        want = np.repeat(weights[:, None], 2, axis=1) * 3.0 / divide
        np.testing.assert_array_equal(np.asarray(g), want.astype(np.float32))


@pytest.mark.parametrize("jit", [False, True])
def test_adasum_exact_cases(rank, size, jit):
    # Orthogonal leaves combine to their sum, equal leaves to themselves; each leaf on its own.
    basis = jnp.zeros((size,), jnp.float32).at[rank].set(2.0 ** rank)
    same = jnp.arange(5, dtype=jnp.float64 if jax.config.jax_enable_x64 else jnp.float32) - 2
    fn = lambda t: kolo.allreduce(t, op=kolo.Adasum, name="adasum")  # noqa: E731
    out = (jax.jit(fn) if jit else fn)({"basis": basis, "same": same})
    assert_tree_equal(out, {"basis": jnp.asarray([2.0 ** r for r in range(size)], jnp.float32), "same": same})
    with pytest.raises(kolo.KoloValueError, match="Adasum combines floating-point tensors"):
        kolo.allreduce(jnp.ones(3, jnp.int32), op=kolo.Adasum, name="adasum.int")


def test_process_sets_inside_and_outside_jit(rank, size):
    # Disjoint sets (even ranks, odd ranks) with the same op names: each runs among its members.
    if size < 2:
        pytest.skip("needs 2 ranks")
    even, odd = list(range(0, size, 2)), list(range(1, size, 2))
    sets = [kolo.add_process_set(even), kolo.add_process_set(odd)]
    try:
        ps, members = (sets[0], even) if rank % 2 == 0 else (sets[1], odd)
        x = {"a": jnp.full((3,), float(rank + 1)), "b": jnp.arange(4, dtype=jnp.int32) * (rank + 1)}
        out = kolo.allreduce(x, op=kolo.Sum, name="ps.x", process_set=ps)
        total = sum(r + 1 for r in members)
        np.testing.assert_array_equal(out["a"], np.full((3,), float(total)))
        np.testing.assert_array_equal(out["b"], np.arange(4) * total)

        @jax.jit
        def step(v):
            mean = kolo.allreduce(v, name="ps.jit", process_set=ps)
            rows = kolo.allgather(v[None], name="ps.gather", process_set=ps)
            block = kolo.reducescatter(jnp.tile(v[None], (len(members), 1)), op=kolo.Sum, name="ps.rs",
                                       process_set=ps)
            root = kolo.broadcast(v, root_rank=members[0], name="ps.b", process_set=ps)
            return mean, rows, block, root

        mean, rows, block, root = step(jnp.full((2,), float(rank)))
        np.testing.assert_allclose(mean, np.full((2,), sum(members) / len(members)))
        np.testing.assert_array_equal(rows, np.stack([np.full((2,), float(r)) for r in members]))
        np.testing.assert_array_equal(block, np.full((1, 2), float(sum(members))))
        np.testing.assert_array_equal(root, np.full((2,), float(members[0])))
        # The gradient of an allreduce inside a set is the set's allreduce of the gradients.
        grad = jax.grad(lambda v: kolo.allreduce(v * (rank + 1), op=kolo.Sum, name="ps.grad", process_set=ps).sum())(
            jnp.ones(2))
        np.testing.assert_array_equal(grad, np.full((2,), float((rank + 1) * len(members))))
        kolo.barrier(process_set=ps)
        unregistered = kolo.ProcessSet([0])
        with pytest.raises(ValueError, match="is not registered"):
            kolo.allreduce(x, process_set=unregistered)
    finally:
        for s in sets:
            kolo.remove_process_set(s)
