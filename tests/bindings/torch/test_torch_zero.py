"""DistributedOptimizer(zero_stage=1|2), the optimizer's state (and at stage 2 the gradients) sharded across
the ranks: against one process training on the full batches, its checkpoints in the unsharded format, and
its errors. (Resuming at another number of ranks: tests/system/zero.)"""

import pytest
import torch
import torch.nn.functional as F

import kolo.torch as kolo


def make_model():
    # 7 x 5 + 5 + 5 x 3 + 3 + 3 x 1 = 61 elements (odd), in 5 parameters, whose shards straddle parameters at
    # 2, 3 and 4 ranks.
    torch.manual_seed(4321)
    return torch.nn.Sequential(torch.nn.Linear(7, 5), torch.nn.Tanh(), torch.nn.Linear(5, 3), torch.nn.Tanh(),
                               torch.nn.Linear(3, 1, bias=False))


def batches(steps, batch):
    g = torch.Generator().manual_seed(7)
    return [(torch.randn(batch, 7, generator=g), torch.randn(batch, 1, generator=g)) for _ in range(steps)]


def train(model, optimizer, data, passes=1, shard=None):
    for i in range(0, len(data), passes):
        optimizer.zero_grad()
        for x, y in data[i:i + passes]:
            if shard is not None:
                x, y = x[shard], y[shard]
            F.mse_loss(model(x), y).backward()
        optimizer.step()
    return model


OPTIMIZERS = {
    "sgd": lambda params: torch.optim.SGD(params, lr=0.05, momentum=0.9, weight_decay=0.01),
    "adam": lambda params: torch.optim.Adam(params, lr=0.01),
    "adamw": lambda params: torch.optim.AdamW(params, lr=0.01, weight_decay=0.1),
    "rmsprop": lambda params: torch.optim.RMSprop(params, lr=0.01),
    "adagrad": lambda params: torch.optim.Adagrad(params, lr=0.05),
}


def sharded(model, name, stage, rank, size, **kwargs):
    return kolo.DistributedOptimizer(OPTIMIZERS[name](model.parameters()), named_parameters=model.named_parameters(),
                                     zero_stage=stage, **kwargs)


def my_rows(batch, rank, size):
    per_rank = batch // size
    return slice(rank * per_rank, (rank + 1) * per_rank)


def assert_close(model, reference, atol=1e-5):
    for (n, p), q in zip(model.named_parameters(), reference.parameters()):
        assert torch.allclose(p, q, atol=atol, rtol=0), (n, (p - q).abs().max().item())


# bucket_bytes: 64 puts (almost) every parameter in a bucket of its own, 1 MiB all of them in one.
@pytest.mark.parametrize("bucket_bytes", [64, 1 << 20])
@pytest.mark.parametrize("passes", [1, 2])
@pytest.mark.parametrize("stage", [1, 2])
@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_matches_one_process_on_full_batches(name, stage, passes, bucket_bytes, rank, size):
    batch = 12 * size
    data = batches(6, batch)
    reference = make_model()
    train(reference, OPTIMIZERS[name](reference.parameters()), data, passes)
    model = make_model()
    optimizer = sharded(model, name, stage, rank, size, backward_passes_per_step=passes, bucket_bytes=bucket_bytes)
    train(model, optimizer, data, passes, shard=my_rows(batch, rank, size))
    assert_close(model, reference)


@pytest.mark.parametrize("stage", [1, 2])
def test_each_rank_holds_its_shard_of_the_state_only(stage, rank, size):
    model = make_model()
    optimizer = sharded(model, "adam", stage, rank, size)
    train(model, optimizer, batches(2, 4 * size), shard=my_rows(4 * size, rank, size))
    total = sum(p.numel() for p in model.parameters())
    held = sum(s["exp_avg"].numel() for s in optimizer._inner.state.values()) if optimizer._inner else 0
    base, extra = divmod(total, size)
    assert held == base + (1 if rank < extra else 0)  # one bucket: the split of 61 elements
    assert len(optimizer.state) == 0  # the wrapper's own, per-parameter state stays empty
    if stage == 2 and size > 1:
        x, y = batches(1, 4)[0]
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        assert all(p.grad is None for p in model.parameters())  # handed over to the reduce-scatter
        optimizer.step()


@pytest.mark.parametrize("stage", [1, 2])
def test_predivide_compression_and_sum_match(stage, rank, size):
    batch = 8 * size
    data = batches(4, batch)
    reference = make_model()
    train(reference, OPTIMIZERS["sgd"](reference.parameters()), data)
    model = make_model()
    optimizer = sharded(model, "sgd", stage, rank, size, gradient_predivide_factor=2.0)
    train(model, optimizer, data, shard=my_rows(batch, rank, size))
    assert_close(model, reference)
    # Sum: each rank's loss scaled by 1/size gives the average too.
    model = make_model()
    optimizer = sharded(model, "sgd", stage, rank, size, op=kolo.Sum, compression=kolo.Compression.fp16)
    for x, y in data:
        optimizer.zero_grad()
        rows = my_rows(batch, rank, size)
        (F.mse_loss(model(x[rows]), y[rows]) / size).backward()
        optimizer.step()
    assert_close(model, reference, atol=2e-3)  # gradients carried in float16


@pytest.mark.parametrize("stage", [1, 2])
def test_clip_grad_norm_clips_the_whole_jobs_gradients(stage, rank, size):
    batch = 8 * size
    data = batches(3, batch)
    reference = make_model()
    ref_opt = OPTIMIZERS["sgd"](reference.parameters())
    model = make_model()
    optimizer = sharded(model, "sgd", stage, rank, size)
    for x, y in data:
        ref_opt.zero_grad()
        F.mse_loss(reference(x), y).backward()
        want = torch.nn.utils.clip_grad_norm_(reference.parameters(), 0.1)
        ref_opt.step()
        optimizer.zero_grad()
        rows = my_rows(batch, rank, size)
        F.mse_loss(model(x[rows]), y[rows]).backward()
        optimizer.synchronize()
        got = optimizer.clip_grad_norm_(0.1)
        with optimizer.skip_synchronize():
            optimizer.step()
        assert abs(float(got) - float(want)) < 1e-5
    assert_close(model, reference)


@pytest.mark.parametrize("stage", [1, 2])
def test_consolidated_state_is_the_unsharded_optimizers(stage, rank, size):
    batch = 8 * size
    data = batches(4, batch)
    reference = make_model()
    ref_opt = OPTIMIZERS["adam"](reference.parameters())
    train(reference, ref_opt, data)
    model = make_model()
    optimizer = sharded(model, "adam", stage, rank, size, bucket_bytes=64)
    train(model, optimizer, data, shard=my_rows(batch, rank, size))
    with pytest.raises(RuntimeError, match="consolidate_state_dict"):
        optimizer.state_dict()
    optimizer.consolidate_state_dict(to=0)
    if rank == 0:
        got, want = optimizer.state_dict(), ref_opt.state_dict()
        assert got["param_groups"] == want["param_groups"]
        assert sorted(got["state"]) == sorted(want["state"])
        for i, entry in want["state"].items():
            assert sorted(got["state"][i]) == sorted(entry)
            for k, v in entry.items():
                assert torch.allclose(got["state"][i][k], v, atol=1e-6, rtol=0), (i, k)
    else:
        with pytest.raises(RuntimeError, match="consolidate_state_dict"):
            optimizer.state_dict()
    # Loaded back into a fresh sharded optimizer (and the parameters), training goes on as the reference's.
    optimizer.consolidate_state_dict(to=None)
    state = optimizer.state_dict()
    more = batches(3, batch)
    train(reference, ref_opt, more)
    again = make_model()
    again.load_state_dict(model.state_dict())
    resumed = sharded(again, "adam", stage, rank, size)
    resumed.load_state_dict(state)
    train(again, resumed, more, shard=my_rows(batch, rank, size))
    assert_close(again, reference)


def test_broadcast_optimizer_state_and_parameters_after_wrapping(rank, size):
    # Horovod's order: wrap, then broadcast the parameters and the optimizer's state from rank 0.
    batch = 8 * size
    data = batches(3, batch)
    reference = make_model()
    train(reference, OPTIMIZERS["adam"](reference.parameters()), data)
    model = make_model()
    if rank != 0:
        with torch.no_grad():
            for p in model.parameters():
                p.add_(1.0)  # wrong until the broadcast
    optimizer = sharded(model, "adam", 2, rank, size)
    kolo.broadcast_parameters(model.state_dict(), root_rank=0)
    kolo.broadcast_optimizer_state(optimizer, root_rank=0)
    train(model, optimizer, data, shard=my_rows(batch, rank, size))
    assert_close(model, reference)


def test_mixed_precision_keeps_float32_masters(rank, size):
    # An update far below bfloat16's resolution at 1.0 is kept by the float32 master and shows in the
    # parameter once enough of them add up; bfloat16 alone would lose every one of them.
    model = torch.nn.Linear(4, 4, bias=False).to(torch.bfloat16)
    with torch.no_grad():
        model.weight.fill_(1.0)
    optimizer = kolo.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1e-3), zero_stage=2,
                                          named_parameters=model.named_parameters())
    for _ in range(20):
        optimizer.zero_grad()
        model.weight.grad = None
        (model.weight.sum() * 1.0).backward()  # every gradient 1: each step subtracts 1e-3
        optimizer.step()
    assert model.weight.dtype == torch.bfloat16
    assert torch.all(model.weight.float() < 0.99), model.weight
    optimizer.consolidate_state_dict(to=None)
    state = optimizer.state_dict()["state"][0]
    assert state["kolo_master_param"].dtype == torch.float32
    assert torch.allclose(state["kolo_master_param"], torch.full((4, 4), 0.98), atol=1e-5)


def test_an_optimizer_that_is_not_elementwise_is_refused(rank, size):
    model = make_model()
    with pytest.raises(ValueError, match="LBFGS's is not"):
        kolo.DistributedOptimizer(torch.optim.LBFGS(model.parameters()), zero_stage=1)
    with pytest.raises(ValueError, match="zero_stage must be"):
        kolo.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), zero_stage=3)


def test_ranks_wrapping_other_parameters_fail_everywhere(rank, size):
    if size == 1:
        pytest.skip("needs two ranks")
    model = torch.nn.Linear(3, 2 if rank == 0 else 4)
    with pytest.raises(ValueError, match="wraps other parameters than its rank 0"):
        kolo.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1), zero_stage=2,
                                  named_parameters=model.named_parameters())


def test_a_group_added_after_wrapping_and_another_models_state_are_refused(rank, size):
    model = make_model()
    optimizer = sharded(model, "sgd", 1, rank, size)
    with pytest.raises(ValueError, match="added after wrapping"):
        optimizer.add_param_group({"params": [torch.nn.Parameter(torch.zeros(2))]})
    other = torch.nn.Sequential(torch.nn.Linear(7, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3), torch.nn.Tanh(),
                                torch.nn.Linear(3, 1, bias=False))  # as many parameters, other shapes
    other_opt = OPTIMIZERS["sgd"](other.parameters())
    train(other, other_opt, batches(1, 4))
    with pytest.raises(ValueError, match="another model's"):
        optimizer.load_state_dict(other_opt.state_dict())


def test_sharded_over_a_process_set(rank, size):
    if size == 1:
        pytest.skip("needs two ranks")
    # Two disjoint sets (the even ranks, the odd ones), each sharding over its own ranks and splitting the
    # batches among them: each trains as one process on the full batches.
    sets = [kolo.add_process_set(r) for r in (list(range(0, size, 2)), list(range(1, size, 2))) if r]
    try:
        mine = next(ps for ps in sets if rank in ps.ranks)
        members = len(mine.ranks)
        batch = 12 * members
        data = batches(4, batch)
        reference = make_model()
        train(reference, OPTIMIZERS["adam"](reference.parameters()), data)
        model = make_model()
        optimizer = kolo.DistributedOptimizer(OPTIMIZERS["adam"](model.parameters()), zero_stage=2,
                                              named_parameters=model.named_parameters(), process_set=mine)
        train(model, optimizer, data, shard=my_rows(batch, mine.ranks.index(rank), members))
        assert_close(model, reference)
        with pytest.raises(ValueError, match="sharded optimizer over every rank only"):
            kolo.elastic.TorchState(model=model, optimizer=optimizer)
    finally:
        kolo.barrier()
        for ps in sets:
            kolo.remove_process_set(ps)


@pytest.mark.parametrize("stage", [1, 2])
def test_an_elastic_state_rolls_a_sharded_optimizer_back_to_its_commit(stage, rank, size):
    # Three steps, a commit, three steps, restore(), the same three again: the reference's six steps. The
    # commit holds the whole state (every rank's shards), which restore() cuts into this rank's again.
    batch = 4 * size
    data = batches(6, batch)
    reference = make_model()
    train(reference, OPTIMIZERS["adam"](reference.parameters()), data)
    model = make_model()
    optimizer = sharded(model, "adam", stage, rank, size)
    state = kolo.elastic.TorchState(model=model, optimizer=optimizer, step=0)
    rows = my_rows(batch, rank, size)
    train(model, optimizer, data[:3], shard=rows)
    state.step = 3
    state.commit()
    committed = state._handlers["optimizer"].saved
    assert sorted(committed["state"]) == list(range(5))  # every parameter's, not this rank's shard alone
    assert all(v.device.type == "cpu" for entry in committed["state"].values() for v in entry.values()
               if torch.is_tensor(v))
    train(model, optimizer, data[3:5], shard=rows)
    state.restore()
    assert state.step == 3
    state.sync()
    train(model, optimizer, data[3:], shard=rows)
    assert_close(model, reference)


def test_an_lr_scheduler_steers_the_shards(rank, size):
    batch = 8 * size
    data = batches(6, batch)
    reference = make_model()
    ref_opt = OPTIMIZERS["sgd"](reference.parameters())
    ref_sched = torch.optim.lr_scheduler.StepLR(ref_opt, step_size=2, gamma=0.1)
    model = make_model()
    optimizer = sharded(model, "sgd", 2, rank, size)
    sched = torch.optim.lr_scheduler.StepLR(optimizer, step_size=2, gamma=0.1)
    for x, y in data:
        for m, o, rows in ((reference, ref_opt, slice(None)), (model, optimizer, my_rows(batch, rank, size))):
            o.zero_grad()
            F.mse_loss(m(x[rows]), y[rows]).backward()
            o.step()
        ref_sched.step()
        sched.step()
    assert_close(model, reference)


@pytest.mark.parametrize("clip", [False, True])
@pytest.mark.parametrize("stage", [1, 2])
def test_join_with_uneven_inputs_steps_every_shard(stage, clip, rank, size):
    # Rank r has 6 - r batches; a rank out of data joins and takes part in the others' steps with zero
    # gradients (an Average divides by every rank, as Horovod's join), stepping its shard of the state.
    if size == 1:
        pytest.skip("needs two ranks")
    batch = 4
    data = batches(6, batch * size)
    mine = [(x[my_rows(batch * size, rank, size)], y[my_rows(batch * size, rank, size)]) for x, y in data]
    reference = make_model()
    ref_opt = OPTIMIZERS["adam"](reference.parameters())
    for i, (x, y) in enumerate(data):
        ref_opt.zero_grad()
        training = [r for r in range(size) if i < 6 - r]
        loss = sum(F.mse_loss(reference(x[my_rows(batch * size, r, size)]), y[my_rows(batch * size, r, size)])
                   for r in training) / size
        loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(reference.parameters(), 0.05)
        ref_opt.step()
    model = make_model()
    optimizer = sharded(model, "adam", stage, rank, size)
    for x, y in mine[:6 - rank]:
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        if clip:
            optimizer.synchronize()
            optimizer.clip_grad_norm_(0.05)
            with optimizer.skip_synchronize():
                optimizer.step()
        else:
            optimizer.step()
    assert kolo.join() in range(size)
    assert_close(model, reference)
