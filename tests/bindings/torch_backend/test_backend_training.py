"""Unchanged torch.distributed training on the kolo backend trains to one process's weights: DDP (with a comm hook,
and join with uneven inputs), FSDP2's fully_shard, ZeroRedundancyOptimizer."""
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "system" / "torch_backend"))
from ddp_training import network as model, rows as data, train_shard  # noqa: E402 (the launch tests')

STEPS = 4


def one_process(optimizer_class, **kwargs):
    """What one process training on every row reaches: the weights to match."""
    net, (x, y) = model(), data()
    opt = optimizer_class(net.parameters(), **kwargs)
    for _ in range(STEPS):
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()
    return [p.detach() for p in net.parameters()]


def train(net, opt, rank, size):
    train_shard(net, opt, rank, size, STEPS)


def assert_close(got, expected, tol=1e-12):
    assert len(got) == len(expected)
    for g, e in zip(got, expected):
        assert torch.allclose(g, e, rtol=0, atol=tol), (g - e).abs().max().item()


def test_ddp(rank, size):
    net = model()
    ddp = DDP(net)
    train(ddp, torch.optim.SGD(ddp.parameters(), lr=0.1), rank, size)
    assert_close([p.detach() for p in net.parameters()], one_process(torch.optim.SGD, lr=0.1))


def test_ddp_with_the_fp16_compression_hook(rank, size):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    net = model().float()
    ddp = DDP(net)
    ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    x, y = data()
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    for _ in range(STEPS):
        opt.zero_grad()
        torch.nn.functional.mse_loss(ddp(x[rank::size].float()), y[rank::size].float()).backward()
        opt.step()
    # fp16 on the wire: within what half precision keeps of these gradients.
    assert_close([p.detach().double() for p in net.parameters()], one_process(torch.optim.SGD, lr=0.1), tol=2e-3)


def test_ddp_join_with_uneven_inputs(rank, size):
    """Rank r has r + 1 batches; a rank that has joined contributes zeros, and DDP divides by the world size."""
    net, (x, y) = model(), data()
    ddp = DDP(net)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    with ddp.join():
        for step in range(rank + 1):
            opt.zero_grad()
            torch.nn.functional.mse_loss(ddp(x[rank::size]), y[rank::size]).backward()
            opt.step()
    ref = model()
    ref_opt = torch.optim.SGD(ref.parameters(), lr=0.1)
    for step in range(size):
        ref_opt.zero_grad()
        losses = [torch.nn.functional.mse_loss(ref(x[r::size]), y[r::size]) for r in range(size) if step <= r]
        (sum(losses) / size).backward()
        ref_opt.step()
    assert_close([p.detach() for p in net.parameters()], [p.detach() for p in ref.parameters()])


def test_fsdp2_fully_shard(rank, size):
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        pytest.skip("torch %s has no public fully_shard (2.6 and later; 2.4's private one asks for CUDA streams "
                    "on CPU tensors)" % torch.__version__)
    net = model()
    for layer in net:
        if isinstance(layer, torch.nn.Linear):
            fully_shard(layer)
    fully_shard(net)
    train(net, torch.optim.SGD(net.parameters(), lr=0.1), rank, size)
    assert_close([p.full_tensor().detach() for p in net.parameters()], one_process(torch.optim.SGD, lr=0.1))


def test_zero_redundancy_optimizer(rank, size):
    from torch.distributed.optim import ZeroRedundancyOptimizer
    net = model()
    ddp = DDP(net)
    opt = ZeroRedundancyOptimizer(ddp.parameters(), optimizer_class=torch.optim.Adam, lr=0.01)
    train(ddp, opt, rank, size)
    assert_close([p.detach() for p in net.parameters()], one_process(torch.optim.Adam, lr=0.01))
