"""SyncBatchNorm on each rank's share of a batch (shares of different sizes) against BatchNorm in one
process on the whole batch: outputs, running statistics, and gradients."""
import pytest
import torch

import kolo.torch as kolo


def whole_batch(size, shape, seed):
    # Rank r holds r + 2 rows: shares differ, so the statistics must weigh them by their counts.
    g = torch.Generator().manual_seed(seed)
    rows = sum(r + 2 for r in range(size))
    return torch.randn((rows,) + shape, generator=g, dtype=torch.float64) * 3 + 1


def share(x, rank):
    start = sum(r + 2 for r in range(rank))
    return slice(start, start + rank + 2)


@pytest.mark.parametrize("shape", [(3,), (3, 4, 5)], ids=["1d", "2d"])
def test_matches_batch_norm_on_the_whole_batch(shape, rank, size):
    x = whole_batch(size, shape, seed=1)
    upstream = whole_batch(size, shape, seed=2)  # d(loss)/d(output), a fixed weighting of the output
    reference = (torch.nn.BatchNorm1d if len(shape) == 1 else torch.nn.BatchNorm2d)(3, momentum=0.3).double()
    synced = kolo.SyncBatchNorm(3, momentum=0.3).double()
    with torch.no_grad():
        for bn in (reference, synced):
            bn.weight.copy_(torch.tensor([1.5, -0.5, 2.0]))
            bn.bias.copy_(torch.tensor([0.1, 0.2, -0.3]))

    xr = x.clone().requires_grad_()
    yr = reference(xr)
    (yr * upstream).sum().backward()

    mine = share(x, rank)
    xs = x[mine].clone().requires_grad_()
    ys = synced(xs)
    (ys * upstream[mine]).sum().backward()  # this rank's part of the same loss

    assert torch.allclose(ys, yr[mine], atol=1e-12)
    assert torch.allclose(synced.running_mean, reference.running_mean, atol=1e-12)
    assert torch.allclose(synced.running_var, reference.running_var, atol=1e-12)
    assert torch.allclose(xs.grad, xr.grad[mine], atol=1e-12)
    # The parameters' gradients are each rank's part: their sum over ranks is the whole batch's.
    weight_grad = kolo.allreduce(synced.weight.grad, op=kolo.Sum, name="sbn.weight.%d" % len(shape))
    bias_grad = kolo.allreduce(synced.bias.grad, op=kolo.Sum, name="sbn.bias.%d" % len(shape))
    assert torch.allclose(weight_grad, reference.weight.grad, atol=1e-12)
    assert torch.allclose(bias_grad, reference.bias.grad, atol=1e-12)


def test_evaluation_uses_the_running_statistics(rank, size):
    bn = kolo.SyncBatchNorm(2)
    bn.train()
    bn(torch.randn(4, 2) + rank)
    bn.eval()
    x = torch.randn(3, 2)
    expected = (x - bn.running_mean) / torch.sqrt(bn.running_var + bn.eps) * bn.weight + bn.bias
    assert torch.allclose(bn(x), expected, atol=1e-6)
    # Every rank holds the same running statistics.
    every = kolo.allgather(bn.running_mean.unsqueeze(0), name="sbn.running")
    assert all(torch.equal(every[0], every[r]) for r in range(size))
