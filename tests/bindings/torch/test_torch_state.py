"""Bringing deliberately different ranks to the same state."""
import pytest
import torch
import torch.nn.functional as F

import kolo.torch as kolo


def test_broadcast_parameters_and_optimizer_state(rank, size):
    torch.manual_seed(rank)  # every rank starts different
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001 * (rank + 1))
    for _ in range(rank + 1):  # and with different optimizer state
        optimizer.zero_grad()
        F.mse_loss(model(torch.randn(5, 4)), torch.randn(5, 2)).backward()
        optimizer.step()

    kolo.broadcast_parameters(model.state_dict(), root_rank=0)
    kolo.broadcast_optimizer_state(optimizer, root_rank=0)

    mine = torch.cat([p.detach().flatten() for p in model.parameters()])
    every = kolo.allgather(mine.unsqueeze(0), name="state.params")
    assert all(torch.equal(every[0], every[r]) for r in range(size))
    state = optimizer.state_dict()
    assert state["param_groups"][0]["lr"] == 0.001
    buffers = torch.cat([torch.cat([s["exp_avg"].flatten(), s["exp_avg_sq"].flatten(), s["step"].reshape(1).float()])
                         for _, s in sorted(state["state"].items())])
    every = kolo.allgather(buffers.unsqueeze(0), name="state.optimizer")
    assert all(torch.equal(every[0], every[r]) for r in range(size))
    assert every[0][-1].item() == 1.0  # rank 0 stepped once


def test_broadcast_parameters_from_named_parameters(rank, size):
    p = torch.nn.Parameter(torch.full((3,), float(rank)))
    kolo.broadcast_parameters([("p", p)], root_rank=size - 1)
    assert torch.equal(p.detach(), torch.full((3,), float(size - 1)))


def test_objects(rank, size):
    assert kolo.broadcast_object({"rank": rank, "list": [1, 2]}, root_rank=0) == {"rank": 0, "list": [1, 2]}
    assert kolo.allgather_object(("r", rank)) == [("r", r) for r in range(size)]


# ---- Resuming from a checkpoint, in both of Horovod's orders ------------------------------------

def _model():
    torch.manual_seed(7)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))


def _data(steps, size):
    g = torch.Generator().manual_seed(3)
    return [(torch.randn(4 * size, 4, generator=g), torch.randn(4 * size, 2, generator=g)) for _ in range(steps)]


def _train(model, optimizer, scheduler, data, rank):
    for x, y in data:
        optimizer.zero_grad()
        F.mse_loss(model(x[4 * rank:4 * (rank + 1)]), y[4 * rank:4 * (rank + 1)]).backward()
        optimizer.step()
        scheduler.step()


def _fresh(wrap_first):
    """A model, a momentum SGD (wrapped before or after restoring, as the caller does) and a scheduler."""
    model = _model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    if wrap_first:
        optimizer = kolo.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    return model, optimizer, scheduler


@pytest.mark.parametrize("order", ["wrap_then_restore", "restore_then_wrap"])
def test_a_checkpoint_saved_on_rank_0_resumes_on_every_rank(order, rank, size, tmp_path):
    # The uninterrupted run: 6 steps.
    data = _data(6, size)
    model, optimizer, scheduler = _fresh(wrap_first=True)
    _train(model, optimizer, scheduler, data, rank)
    expected = [p.detach().clone() for p in model.parameters()]

    # 3 steps, a checkpoint on rank 0 (model, momentum, scheduler), then a new process's state:
    # different weights and no momentum on every rank but rank 0, which loads the checkpoint.
    model, optimizer, scheduler = _fresh(wrap_first=True)
    _train(model, optimizer, scheduler, data[:3], rank)
    path = kolo.broadcast_object(str(tmp_path / "checkpoint.pt"), root_rank=0, name="checkpoint.path")
    if rank == 0:
        torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "scheduler": scheduler.state_dict()}, path)
    kolo.barrier()

    torch.manual_seed(100 + rank)
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    wrap_first = order == "wrap_then_restore"  # Horovod's ImageNet example; else its MNIST example
    if wrap_first:
        optimizer = kolo.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.5)
    if rank == 0:
        checkpoint = torch.load(path)
        model.load_state_dict(checkpoint["model"])
        optimizer.load_state_dict(checkpoint["optimizer"])
        scheduler.load_state_dict(checkpoint["scheduler"])
    kolo.broadcast_parameters(model.state_dict(), root_rank=0)
    kolo.broadcast_optimizer_state(optimizer, root_rank=0)
    scheduler.load_state_dict(kolo.broadcast_object(scheduler.state_dict(), root_rank=0, name="scheduler"))
    if not wrap_first:
        optimizer = kolo.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
        scheduler.optimizer = optimizer
    _train(model, optimizer, scheduler, data[3:], rank)
    for p, q in zip(model.parameters(), expected):
        assert torch.allclose(p.detach(), q, atol=1e-6, rtol=0), (p.detach() - q).abs().max().item()
    assert optimizer.param_groups[0]["lr"] == 0.1 * 0.5 ** 3


def test_a_restore_failing_on_one_rank_fails_every_rank(rank, size):
    if size < 2:
        pytest.skip("needs a second rank")
    model = _model()
    # Rank 1's optimizer has two parameter groups where rank 0's has one: its restore fails.
    if rank == 1:
        optimizer = torch.optim.SGD([{"params": [model[0].weight]},
                                     {"params": [p for n, p in model.named_parameters() if n != "0.weight"]}], lr=0.1)
    else:
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    optimizer = kolo.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())
    with pytest.raises(kolo.KoloError, match=r"broadcast_optimizer_state failed on rank 1: ValueError: .*parameter group"):
        kolo.broadcast_optimizer_state(optimizer, root_rank=0)
    kolo.barrier()  # every rank is still in step


@pytest.mark.parametrize("wrapped", [False, True])
def test_a_new_optimizer_gets_its_state_first(wrapped, rank, size):
    # As in Horovod: an optimizer that has not stepped is given zero gradients and one step of its
    # own (no reduction), so that its state exists and matches on every rank.
    torch.manual_seed(5)
    model = torch.nn.Linear(3, 2)
    frozen = torch.nn.Parameter(torch.ones(2), requires_grad=False)
    opt = torch.optim.SGD(list(model.parameters()) + [frozen], lr=0.1, momentum=0.9, weight_decay=0.01)
    if wrapped:
        opt = kolo.DistributedOptimizer(opt, named_parameters=list(model.named_parameters()) + [("frozen", frozen)])
    start = model.weight.detach().clone()
    kolo.broadcast_optimizer_state(opt, root_rank=0)
    assert frozen.grad is None
    assert torch.equal(model.weight.grad, torch.zeros(2, 3))
    # The one step with zero gradients applied the weight decay alone: momentum buffer 0.01 * w.
    buf = opt.state[model.weight]["momentum_buffer"]
    assert torch.allclose(buf, 0.01 * start) and torch.allclose(model.weight.detach(), start - 0.1 * 0.01 * start)
    gathered = kolo.allgather(buf.unsqueeze(0), name="state.buf.%d" % wrapped)
    assert all(torch.equal(gathered[0], g) for g in gathered)
