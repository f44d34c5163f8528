"""Bringing deliberately different ranks to the same state."""
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
