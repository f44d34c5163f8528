"""What the kolo backend refuses, at once and naming the op and the rank; and a disagreement between ranks,
which fails on every rank instead of hanging. The world goes on after each."""
import pytest
import torch
import torch.distributed as dist

from kolo.torch import KoloError
from kolo.torch.backend._torch_version import HANDS_NEW_GROUP


def world_still_works(size):
    t = torch.ones(1)
    dist.all_reduce(t)
    assert t.item() == float(size)


@pytest.mark.parametrize("op", ["BAND", "BOR", "BXOR"])
def test_a_reduce_op_kolo_lacks_is_refused_naming_it(rank, size, op):
    with pytest.raises(KoloError, match=r"all_reduce on rank %d: kolo reduces with SUM, AVG, PRODUCT, MIN and MAX, "
                                        r"not ReduceOp.%s" % (rank, op)):
        dist.all_reduce(torch.ones(2, dtype=torch.int32), op=getattr(dist.ReduceOp, op))
    world_still_works(size)


def test_a_sparse_tensor_reduces_with_sum_or_avg_only(rank, size):
    t = torch.sparse_coo_tensor([[0]], [2.0], (3,))
    with pytest.raises(KoloError, match=r"all_reduce on rank %d: a sparse tensor reduces with SUM or AVG, "
                                        r"not ReduceOp.MAX" % rank):
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
    world_still_works(size)


def test_point_to_point_is_refused_naming_it(rank, size):
    if size < 2:
        pytest.skip("needs 2 ranks")
    with pytest.raises(KoloError, match=r"send on rank %d: the kolo backend has collectives only" % rank):
        dist.send(torch.ones(1), dst=(rank + 1) % size)
    world_still_works(size)


def test_a_dtype_kolo_lacks_is_refused_naming_it(rank, size):
    with pytest.raises(KoloError, match=r"rank %d: input has dtype torch.uint32; kolo supports" % rank):
        dist.all_reduce(torch.ones(2, dtype=torch.uint32))
    world_still_works(size)


def test_tensors_of_different_sizes_fail_on_every_rank(rank, size):
    if size < 2:
        pytest.skip("needs 2 ranks")
    with pytest.raises(KoloError, match=r"shape|size|element"):
        dist.all_reduce(torch.ones(2 + rank))
    world_still_works(size)


def test_a_gather_output_of_the_wrong_size_is_refused(rank, size):
    with pytest.raises(KoloError, match=r"all_gather_into_tensor on rank %d: the output has 3 elements, not %d ranks "
                                        r"x the input's 2" % (rank, size)):
        dist.all_gather_into_tensor(torch.empty(3), torch.ones(2))
    world_still_works(size)


@pytest.mark.skipif(not HANDS_NEW_GROUP, reason="torch %s makes a group of another backend itself, beside kolo's "
                                                "default group: nothing for kolo to refuse" % torch.__version__)
def test_a_group_of_another_backend_is_refused_naming_why(rank, size):
    with pytest.raises(KoloError, match=r"new_group\(backend='gloo'\) on rank %d: with kolo as the default group's "
                                        r"backend" % rank):
        dist.new_group(backend="gloo")
    world_still_works(size)
