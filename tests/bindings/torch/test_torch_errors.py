"""Bad input raises at once naming the tensor; ranks that disagree raise on every rank."""
import pytest
import torch

import kolo.torch as kolo


def test_shape_that_differs_between_ranks_raises_on_every_rank(rank, size):
    if size == 1:
        pytest.skip("needs two ranks to disagree")
    with pytest.raises(kolo.KoloError) as e:
        kolo.allreduce(torch.zeros(2 + (rank == 1)), name="differs")
    others = "rank 0" if size == 2 else "ranks 0,2" if size == 3 else "ranks 0,2-%d" % (size - 1)
    assert str(e.value) == "Mismatched shape for tensor 'differs' (allreduce): [2] on %s, [3] on rank 1." % others
    # The engine goes on.
    assert kolo.allreduce(torch.ones(2), op=kolo.Sum, name="after.differs").tolist() == [size, size]


def test_bad_calls_raise_value_errors_naming_the_tensor(rank):
    with pytest.raises(kolo.KoloValueError, match="tensor 'z' on rank %d: input has dtype torch.complex64" % rank):
        kolo.allreduce(torch.zeros(3, dtype=torch.complex64), name="z")
    with pytest.raises(ValueError, match="factors do not apply to bool tensors"):
        kolo.allreduce(torch.zeros(3, dtype=torch.bool), prescale_factor=2.0, name="flags")
    with pytest.raises(ValueError, match="allreduce of tensor 'strided' on rank %d: input is not contiguous" % rank):
        kolo.allreduce_(torch.zeros(4, 4).t(), name="strided")
    with pytest.raises(ValueError, match="root rank 99 is outside"):
        kolo.broadcast_(torch.zeros(2), 99, name="bad.root")
    with pytest.raises(ValueError, match="split sizes add up to 5, but the first dimension is 4"):
        kolo.alltoall(torch.zeros(4), splits=[5] + [0] * (kolo.size() - 1), name="bad.splits")


def test_join_lets_others_go_on(rank, size):
    if size == 1:
        pytest.skip("join needs a second rank")
    if rank == size - 1:
        last = kolo.join()
    else:
        got = kolo.allreduce(torch.full((2,), float(rank + 1)), name="joined.avg")
        n = size - 1
        # The joined rank contributes zeros and the average is over every rank, as in Horovod.
        assert got.tolist() == [sum(range(1, n + 1)) * (1.0 / size)] * 2
        last = kolo.join()
    assert kolo.allgather_object(last) == [last] * size


def test_a_name_in_flight_raises_at_submit(rank, size):
    if size == 1:
        pytest.skip("needs a second rank to hold the first op in flight")
    # Rank 0 submits twice before the others submit at all: the first stays in flight, and the C ABI
    # refuses the second at once (kolo._C raises it there, with no handle).
    if rank == 0:
        handle = kolo.allreduce_async(torch.ones(2), op=kolo.Sum, name="twice")
        with pytest.raises(kolo.KoloValueError) as e:
            kolo.allreduce_async(torch.ones(2), op=kolo.Sum, name="twice")
        assert str(e.value) == ("tensor 'twice' is already in flight on rank 0: wait for it before submitting the "
                                "name again")
        # A blocking allreduce_ of a CPU tensor (one call, no descriptors) raises the same, and keeps the tensor.
        kept = torch.full((2,), 7.0)
        with pytest.raises(kolo.KoloValueError) as e:
            kolo.allreduce_(kept, op=kolo.Sum, name="twice")
        assert str(e.value) == ("tensor 'twice' is already in flight on rank 0: wait for it before submitting the "
                                "name again")
        assert kept.tolist() == [7.0, 7.0]
    kolo.barrier()
    if rank != 0:
        handle = kolo.allreduce_async(torch.ones(2), op=kolo.Sum, name="twice")
    assert kolo.synchronize(handle).tolist() == [size, size]
