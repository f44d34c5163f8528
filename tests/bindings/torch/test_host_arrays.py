"""kolo's host path on NumPy arrays (kolo._host: what Keras' TensorFlow backend runs inside
tf.numpy_function), exact at N ranks: every collective, bit-carried dtypes, errors naming the tensor."""
import numpy as np
import pytest

from kolo import _host
from kolo._abi import AVERAGE, MAX, SUM
from kolo._errors import KoloValueError


def test_allreduce_and_broadcast(rank, size):
    out = _host.allreduce([np.full((2, 3), rank + 1, np.float32), np.asarray(rank, np.int64)], ["h.a", "h.b"],
                          SUM)
    np.testing.assert_array_equal(out[0], np.full((2, 3), size * (size + 1) / 2, np.float32))
    assert out[1].shape == () and out[1] == size * (size - 1) // 2
    tokens = _host.allreduce([np.asarray([65535 - rank, rank], np.uint16)], ["h.u16"], MAX)[0]
    assert tokens.dtype == np.uint16 and tokens.tolist() == [65535, size - 1]
    # uint32 (a Keras seed generator's state) travels as 32-bit bits.
    seeds = _host.broadcast([np.arange(4, dtype=np.uint32) + 7 * rank], ["h.seed"], size - 1)[0]
    assert seeds.dtype == np.uint32 and seeds.tolist() == [7 * (size - 1) + i for i in range(4)]


def test_allgather_uneven_rows_and_bits(rank, size):
    rows, seeds = _host.allgather([np.full((rank + 1, 2), rank, np.int16), np.full((1,), rank, np.uint32)],
                                  ["h.rows", "h.seeds"])
    np.testing.assert_array_equal(rows, np.concatenate([np.full((r + 1, 2), r, np.int16) for r in range(size)]))
    assert seeds.dtype == np.uint32 and seeds.tolist() == list(range(size))
    with pytest.raises(KoloValueError, match="tensor 'h.scalar' on rank %d: allgather needs at least one "
                                                   "dimension" % rank):
        _host.allgather([np.float32(1.0)], ["h.scalar"])


def test_reducescatter_blocks(rank, size):
    # 7 rows: this rank's block of the sum; the first 7 % size ranks hold one row more.
    counts = [7 // size + (r < 7 % size) for r in range(size)]
    start = sum(counts[:rank])
    mine = _host.reducescatter([np.arange(14, dtype=np.float64).reshape(7, 2) + rank], ["h.rs"], AVERAGE,
                               prescale_factor=2.0)[0]
    expected = 2.0 * (np.arange(14, dtype=np.float64).reshape(7, 2) + (size - 1) / 2)
    np.testing.assert_array_equal(mine, expected[start:start + counts[rank]])
    with pytest.raises(KoloValueError, match="tensor 'h.complex' on rank %d: input has dtype complex64"
                       % rank):
        _host.reducescatter([np.ones((2,), np.complex64)], ["h.complex"], SUM)


def test_a_refused_array_waits_for_those_enqueued_before_it(rank, size):
    # kolo._C raises for the bool array (refused at once: factors do not apply); the float array before it
    # is waited for on every rank before the error, so it ran and its name is free again.
    arrays = [np.full((3,), rank + 1.0, np.float32), np.ones((2,), np.bool_)]
    with pytest.raises(KoloValueError) as e:
        _host.allreduce(arrays, ["h.first", "h.flags"], SUM, prescale_factor=2.0)
    assert str(e.value) == ("allreduce of tensor 'h.flags' on rank %d: prescale and postscale factors do not apply "
                            "to bool tensors (their reductions are logical)" % rank)
    again = _host.allreduce([np.full((3,), rank + 1.0, np.float32)], ["h.first"], SUM)[0]
    assert again.tolist() == [size * (size + 1) / 2] * 3
