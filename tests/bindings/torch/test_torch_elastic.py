"""kolo.torch.elastic's pieces at N ranks, outside an elastic launch: TorchState's commit, restore,
sync and bytes; ElasticSampler's partition before and after the size changes; the commit store's
atomic replacement (the restart path's end to end is tests/system/elastic)."""
import io
import os

import torch

import kolo.torch as kolo
from kolo.elastic.commit_store import CommitStore


def model_and_optimizer(seed):
    torch.manual_seed(seed)
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()  # momentum buffers exist
    return model, optimizer


def test_commit_restore_and_sync_from_rank_0(rank, size):
    model, optimizer = model_and_optimizer(seed=rank)
    sampler = kolo.elastic.ElasticSampler(range(10), shuffle=False)
    state = kolo.elastic.TorchState(model, optimizer, sampler=sampler, epoch=rank, batch=3)
    state.commit()
    committed = {k: v.clone() for k, v in model.state_dict().items()}
    with torch.no_grad():
        model.weight.add_(1.0)
    state.epoch, state.batch = 99, 99
    sampler.record_batch(0, 2)
    state.restore()
    assert state.epoch == rank and state.batch == 3 and sampler.processed_num == 0
    assert all(torch.equal(model.state_dict()[k], v) for k, v in committed.items())
    state.sync()
    root_model, root_optimizer = model_and_optimizer(seed=0)
    assert state.epoch == 0
    assert all(torch.equal(model.state_dict()[k], v) for k, v in root_model.state_dict().items())
    mine, root = optimizer.state_dict()["state"], root_optimizer.state_dict()["state"]
    assert all(torch.equal(mine[k]["momentum_buffer"], root[k]["momentum_buffer"]) for k in root)


def test_state_travels_as_bytes(rank):
    model, optimizer = model_and_optimizer(seed=rank)
    state = kolo.elastic.TorchState(model, optimizer, epoch=4)
    state.commit()
    payload = io.BytesIO()
    state.serialize(payload)
    payload = payload.getvalue()
    other_model, other_optimizer = model_and_optimizer(seed=rank + 100)
    other = kolo.elastic.TorchState(other_model, other_optimizer, epoch=0)
    other.deserialize(payload)
    assert other.epoch == 4
    assert all(torch.equal(other_model.state_dict()[k], v) for k, v in model.state_dict().items())


def test_the_sampler_repartitions_what_is_left_of_the_epoch(rank, size):
    sampler = kolo.elastic.ElasticSampler(range(23), shuffle=True, seed=5)
    shares = kolo.allgather_object(list(iter(sampler)), name="shares")
    seen = [i for share in shares for i in share]
    assert sorted(set(seen)) == list(range(23)) and len(seen) == len(sampler) * size
    assert len(seen) - 23 < size  # the last round's padding only
    # Two rounds of 2 per rank done; then (as after a restart on another size) what is left, over 2 ranks.
    sampler.record_batch(0, 2)
    sampler.record_batch(1, 2)
    done = sampler.remaining_indices[:4 * size]
    after = [kolo.elastic.ElasticSampler(range(23), shuffle=True, seed=5) for _ in range(2)]
    for r, s in enumerate(after):
        s._place = lambda r=r: (2, r)
        s.load_state_dict(sampler.state_dict())
    left = [i for s in after for i in iter(s)]
    assert sorted(set(left) | set(done)) == list(range(23)) and not set(left) & set(done)


def test_run_outside_an_elastic_launch_syncs_and_runs_once(rank, size):
    model, optimizer = model_and_optimizer(seed=rank)
    state = kolo.elastic.TorchState(model, optimizer, epoch=rank)
    calls = []

    @kolo.elastic.run
    def train(s, extra):
        calls.append(extra)
        return s.epoch

    assert train(state, "x") == 0 and calls == ["x"]


def test_the_commit_store_replaces_a_commit_whole_or_not_at_all(tmp_path, rank):
    store = CommitStore("job%d" % rank, root=str(tmp_path))
    assert store.newest() == (-1, None)
    store.write(0, lambda f: f.write(b"first"))
    store.write(1, lambda f: f.write(b"second"))
    assert store.newest() == (1, b"second") and store.newest(with_payload=False) == (1, None)
    # A crash while writing commit 2 leaves a temporary file; commit 1 is still the one.
    with open(store.path + ".123.tmp", "wb") as f:
        f.write(b"KOLOCMT1partial")
    assert store.newest() == (1, b"second")
    # A commit cut short (not through write()) is not taken.
    with open(store.path, "r+b") as f:
        f.truncate(os.path.getsize(store.path) - 1)
    assert store.newest() == (-1, None)
    store.clear()
    assert not os.path.exists(store.directory)


def test_a_peers_failure_is_told_apart_whatever_the_framework_raises(rank):
    # In place (ULFM), kolo.torch raises PeersFailedError; TensorFlow's ops and XLA's handlers raise
    # their framework's error with kolo's message: elastic.run rolls back on either, and on nothing else.
    from kolo._abi import ABORTED, PEERS_FAILED, UNSUPPORTED
    from kolo._errors import PeersFailedError, error_for
    from kolo._lifecycle import in_place_recovery, is_initialized, recover_in_place
    from kolo.elastic.runner import _peers_failed
    message = ("tensor 'g' did not run: negotiation failed on rank 1: MPI_Iallreduce failed: MPI_ERR_PROC_FAILED: "
               "Process Failure (a peer failed: the survivors roll back to their last commit)")
    assert _peers_failed(error_for(PEERS_FAILED, message))
    assert type(error_for(PEERS_FAILED, message)) is PeersFailedError
    assert _peers_failed(RuntimeError("{{function_node KoloAllreduce}} " + message))
    assert not _peers_failed(error_for(ABORTED, "kolo was shut down"))
    assert not _peers_failed(ValueError("a peer failed"))
    # Without ULFM (Debian's Open MPI) the job is not in place, and recovering is refused, saying why.
    assert in_place_recovery() is False
    try:
        recover_in_place()
    except kolo.KoloError as e:
        why = "no ULFM" if kolo.mpi_enabled() else "makes its survivors go on"
        assert e.code == UNSUPPORTED and why in str(e)
    else:
        raise AssertionError("recover_in_place without ULFM did not raise")
    assert is_initialized()


def test_restoring_the_state_forgets_a_failed_steps_allreduces(rank, size):
    # In place, a peer's failure may raise out of backward (in a gradient's hook) with some of the
    # step's allreduces already started: restore() must wait for those and forget them, so that the
    # rolled-back step's zero_grad() and step() run as in any other step.
    torch.manual_seed(0)
    model = torch.nn.Linear(2, 1, bias=False)
    optimizer = kolo.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=1.0),
                                          named_parameters=model.named_parameters())
    state = kolo.elastic.TorchState(model, optimizer)
    state.commit()
    start = model.weight.detach().clone()
    model(torch.full((1, 2), float(rank + 1))).sum().backward()  # the step the failure cut short
    assert optimizer._handles or size == 1  # one rank reduces nothing
    state.restore()
    optimizer.zero_grad()  # raised "allreduces are still in flight" before restore() forgot them
    model(torch.full((1, 2), float(rank + 1))).sum().backward()
    optimizer.step()
    # The average of the ranks' gradients (rank + 1 each): (size + 1) / 2, taken once.
    assert torch.equal(model.weight.detach(), start - (size + 1) / 2.0)
