"""Gradients through kolo's collectives, checked against the formula."""
import pytest
import torch

import kolo.torch as kolo


def test_allreduce_gradient_is_the_allreduce_of_gradients(rank, size):
    for op, scale in ((kolo.Sum, 1.0), (kolo.Average, 1.0 / size)):
        x = torch.full((3,), float(rank + 1), requires_grad=True)
        y = kolo.allreduce(x, op=op, name="ag.ar.%d" % op)
        # Rank r's loss weighs the result by r + 1; d(sum over ranks)/dx = sum_r (r + 1) * scale.
        (y * (rank + 1)).sum().backward()
        want = sum(r + 1 for r in range(size)) * scale
        assert torch.equal(x.grad, torch.full((3,), want))


def test_allgather_gradient_is_this_ranks_rows_of_the_averaged_gradient(rank, size):
    # As in Horovod: the gradients of the gathered rows averaged over the ranks, this rank's rows kept.
    x = torch.full((rank + 1, 2), 1.0, requires_grad=True)
    y = kolo.allgather(x, name="ag.gather")
    weights = torch.arange(y.shape[0] * 2, dtype=torch.float32).reshape(-1, 2) * (rank + 1)
    (y * weights).sum().backward()
    offset = sum(r + 1 for r in range(rank))
    base = torch.arange(y.shape[0] * 2, dtype=torch.float32).reshape(-1, 2)
    want = base[offset:offset + rank + 1] * (sum(r + 1 for r in range(size)) / size)
    assert torch.equal(x.grad, want)


def test_broadcast_gradient_reaches_the_root_only(rank, size):
    x = torch.full((4,), 2.0, requires_grad=True)
    y = kolo.broadcast(x, 0, name="ag.bcast")
    (y * (rank + 1)).sum().backward()
    want = sum(r + 1 for r in range(size)) / size if rank == 0 else 0.0  # averaged, as in Horovod
    assert torch.equal(x.grad, torch.full((4,), want))


def test_alltoall_gradient_goes_back_where_rows_came_from(rank, size):
    x = torch.arange(2 * size, dtype=torch.float32).reshape(2 * size, 1).requires_grad_()
    y = kolo.alltoall(x, name="ag.a2a")
    # Row k of y came from rank k // 2; weigh it by the receiving rank's number plus one.
    (y * (rank + 1)).sum().backward()
    want = torch.tensor([[float(q + 1)] for q in range(size) for _ in range(2)])
    assert torch.equal(x.grad, want)


@pytest.mark.parametrize("op", ["Average", "Sum"])
def test_reducescatter_gradient_is_the_allgather_of_gradients(op, rank, size):
    # Horovod's formula: the blocks' gradients gathered, times the size for Sum.
    x = torch.ones(size * 2, requires_grad=True)
    y = kolo.reducescatter(x, op=getattr(kolo, op), name="ag.rs." + op)
    (y * (rank + 1)).sum().backward()
    want = torch.tensor([float(r + 1) for r in range(size) for _ in range(2)]) * (size if op == "Sum" else 1)
    assert torch.equal(x.grad, want)
