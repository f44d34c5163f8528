"""DistributedOptimizer on several ranks, each with its share of every batch, against one process
training on the full batches."""
import copy

import pytest
import torch
import torch.nn.functional as F

import kolo.torch as kolo


def make_model():
    torch.manual_seed(1234)
    return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 3))


def batches(steps, batch):
    g = torch.Generator().manual_seed(99)
    return [(torch.randn(batch, 6, generator=g), torch.randint(0, 3, (batch,), generator=g)) for _ in range(steps)]


def train(model, optimizer, data, passes, shard=None):
    """Each step: `passes` backward passes over consecutive batches, then one optimizer step."""
    for i in range(0, len(data), passes):
        optimizer.zero_grad()
        for x, y in data[i:i + passes]:
            if shard is not None:
                x, y = x[shard], y[shard]
            F.cross_entropy(model(x), y).backward()
        optimizer.step()
    return model


OPTIMIZERS = {
    "sgd": lambda params: torch.optim.SGD(params, lr=0.1, momentum=0.9),
    "adam": lambda params: torch.optim.Adam(params, lr=0.01),
}


@pytest.mark.parametrize("passes", [1, 2])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_matches_one_process_on_full_batches(name, passes, rank, size):
    batch = 12 * size
    data = batches(8, batch)
    reference = make_model()
    train(reference, OPTIMIZERS[name](reference.parameters()), data, passes)

    model = make_model()
    optimizer = kolo.DistributedOptimizer(OPTIMIZERS[name](model.parameters()), named_parameters=model.named_parameters(),
                                          backward_passes_per_step=passes)
    per_rank = batch // size
    train(model, optimizer, data, passes, shard=slice(rank * per_rank, (rank + 1) * per_rank))
    for (n, p), q in zip(model.named_parameters(), reference.parameters()):
        assert torch.allclose(p, q, atol=1e-5, rtol=0), (n, (p - q).abs().max().item())


@pytest.mark.parametrize("groups", [3, "lists"])
def test_groups_reduce_together_and_match_one_process(groups, rank, size):
    # A model of 7 parameters: num_groups=3 splits them as Horovod does (3 + 2 + 2, consecutive); a
    # list of lists makes a group of each, the rest alone. Grouping decides only what is reduced
    # together: the weights are the one-process reference's.
    def seven():
        torch.manual_seed(1234)
        return torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Tanh(), torch.nn.Linear(16, 8), torch.nn.Tanh(),
                                   torch.nn.Linear(8, 3, bias=False), torch.nn.Linear(3, 3))
    batch = 12 * size
    data = batches(6, batch)
    reference = seven()
    train(reference, torch.optim.SGD(reference.parameters(), lr=0.1), data, 1)
    model = seven()
    params = list(model.parameters())
    assert len(params) == 7
    spec = groups if groups == 3 else [[params[0], params[3]], [params[6]]]
    optimizer = kolo.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                          named_parameters=model.named_parameters(), groups=spec)
    sizes = sorted({id(g): len(g) for g in optimizer._group_of.values()}.values(), reverse=True)
    assert sizes == ([3, 2, 2] if groups == 3 else [2, 1])
    if groups == 3:
        assert [p for p in params if len(optimizer._group_of[p]) == 3] == params[:3]
    per_rank = batch // size
    train(model, optimizer, data, 1, shard=slice(rank * per_rank, (rank + 1) * per_rank))
    for (n, p), q in zip(model.named_parameters(), reference.parameters()):
        assert torch.allclose(p, q, atol=1e-5, rtol=0), (n, (p - q).abs().max().item())


def test_fp16_compression_and_predivide_stay_close(rank, size):
    batch = 8 * size
    data = batches(4, batch)
    reference = make_model()
    train(reference, torch.optim.SGD(reference.parameters(), lr=0.1), data, 1)
    model = make_model()
    optimizer = kolo.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                          named_parameters=model.named_parameters(),
                                          compression=kolo.Compression.fp16, gradient_predivide_factor=2.0)
    per_rank = batch // size
    train(model, optimizer, data, 1, shard=slice(rank * per_rank, (rank + 1) * per_rank))
    for p, q in zip(model.parameters(), reference.parameters()):
        assert torch.allclose(p, q, atol=2e-3, rtol=0)  # float16 gradients: about 3 decimal digits


def test_unused_parameters_and_skip_synchronize(rank, size):
    model = make_model()
    unused = torch.nn.Parameter(torch.ones(2))
    params = list(model.parameters()) + [unused]
    named = list(model.named_parameters()) + [("unused", unused)]
    optimizer = kolo.DistributedOptimizer(torch.optim.SGD(params, lr=0.1), named_parameters=named)
    x, y = batches(1, 4)[0]
    F.cross_entropy(model(x + rank), y).backward()
    optimizer.synchronize()  # the unused parameter is reduced too, so no rank waits on it
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    with optimizer.skip_synchronize():
        optimizer.step()
    gathered = kolo.allgather(torch.cat([p.detach().flatten() for p in model.parameters()]).unsqueeze(0),
                              name="unused.check")
    assert all(torch.equal(gathered[0], gathered[r]) for r in range(size))
    if size > 1:  # reduced as zeros on every rank, as Horovod does
        assert torch.equal(unused.grad, torch.zeros(2))


def test_zero_grad_between_backward_and_step_is_refused(rank, size):
    if size == 1:
        pytest.skip("one rank reduces nothing")
    model = make_model()
    optimizer = kolo.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                          named_parameters=model.named_parameters())
    x, y = batches(1, 4)[0]
    F.cross_entropy(model(x), y).backward()
    with pytest.raises(AssertionError, match="zero_grad"):
        optimizer.zero_grad()
    optimizer.step()


def test_optimizer_is_still_the_users_class():
    model = make_model()
    optimizer = kolo.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=0.01),
                                          named_parameters=model.named_parameters())
    assert isinstance(optimizer, torch.optim.Adam)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
    optimizer.step()
    scheduler.step()
    assert optimizer.param_groups[0]["lr"] == 0.005
    with pytest.raises(ValueError, match="duplicate names"):
        kolo.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                  named_parameters=[("w", p) for p in model.parameters()])


@pytest.mark.parametrize("zero_stage", [0, 1, 2])
def test_a_dropped_optimizer_is_freed_and_its_hooks_leave_the_model(zero_stage, rank, size):
    """The parameters hold the optimizer's hooks; the hooks must not keep a dropped optimizer alive as long
    as its model (under torch 2 they did: it went on reducing gradients for nobody). Then a new optimizer
    over the same model trains as the one process does."""
    import gc
    import weakref

    model = make_model()
    kwargs = {"zero_stage": zero_stage} if zero_stage else {}
    dropped = kolo.DistributedOptimizer(OPTIMIZERS["sgd"](model.parameters()),
                                        named_parameters=model.named_parameters(), **kwargs)
    train(model, dropped, batches(2, 4 * size), 1, slice(rank * 4, rank * 4 + 4))
    gone = weakref.ref(dropped)
    del dropped
    gc.collect()
    assert gone() is None

    reference = copy.deepcopy(model)
    data = batches(4, 4 * size)
    train(reference, OPTIMIZERS["sgd"](reference.parameters()), data, 1)
    kept = kolo.DistributedOptimizer(OPTIMIZERS["sgd"](model.parameters()),
                                     named_parameters=model.named_parameters(), **kwargs)
    train(model, kept, data, 1, slice(rank * 4, rank * 4 + 4))
    for mine, theirs in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(mine, theirs, rtol=1e-5, atol=1e-6)
