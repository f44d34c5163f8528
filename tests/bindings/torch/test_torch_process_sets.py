"""Process sets in kolo.torch (Horovod's names): every collective inside disjoint and overlapping
sets at once, the ProcessSet object, the optimizer, broadcasts and SyncBatchNorm inside a set, and the
errors. Every rank runs every test (registering sets is collective over the job)."""
import contextlib

import pytest
import torch

import kolo.torch as kolo


@contextlib.contextmanager
def registered(*rank_lists):
    sets = [kolo.add_process_set(r) for r in rank_lists]
    try:
        yield sets
    finally:
        kolo.barrier()
        for ps in sets:
            kolo.remove_process_set(ps)


def halves(size):
    """Two disjoint sets covering the job: the even ranks and the odd ones."""
    return list(range(0, size, 2)), list(range(1, size, 2))


def test_names_and_global_set(rank, size):
    assert kolo.global_process_set.process_set_id == 0
    assert kolo.global_process_set.ranks == list(range(size))
    assert (kolo.global_process_set.size(), kolo.global_process_set.rank(),
            kolo.global_process_set.included()) == (size, rank, True)
    ps = kolo.ProcessSet([1, 0])
    assert ps.ranks == [0, 1] and (ps.size(), ps.rank(), ps.included()) == (None, None, None)
    assert repr(ps) == "ProcessSet(process_set_id=None, ranks=[0, 1], mpi_comm=None)"
    with pytest.raises(ValueError, match="global process set cannot be removed"):
        kolo.remove_process_set(kolo.global_process_set)
    assert kolo.remove_process_set(ps) is False  # never registered
    # The error names the call (its text is made only on this path).
    with pytest.raises(ValueError, match=r"^allreduce of tensor '\(unnamed\)': ProcessSet\(process_set_id=None, "
                                         r"ranks=\[0, 1\], mpi_comm=None\) is not registered"):
        kolo.allreduce(torch.ones(1), process_set=ps)
    with pytest.raises(ValueError, match=r"^broadcast of tensor 'w': ProcessSet"):
        kolo.broadcast(torch.ones(1), 0, name="w", process_set=ps)
    with pytest.raises(ValueError, match="comm="):
        kolo.init(comm=[0])


def test_registering_and_removing(rank, size):
    if size < 2:
        pytest.skip("needs 2 ranks (a set of every rank is the global one)")
    from kolo import _C
    ids = sorted(_C.process_set_ids())
    with pytest.raises(kolo.KoloValueError, match="are the whole job: use the global process set"):
        kolo.add_process_set(range(size))
    assert sorted(_C.process_set_ids()) == ids  # a refused set leaves nothing behind
    ps = kolo.add_process_set(kolo.ProcessSet([0]))
    assert ps.process_set_id >= 1
    assert (ps.size(), ps.rank(), ps.included()) == (1, 0 if rank == 0 else -1, rank == 0)
    with pytest.raises(ValueError, match="registered already"):
        kolo.add_process_set(ps)
    assert kolo.remove_process_set(ps) is True
    assert ps.process_set_id is None and ps.size() is None
    assert kolo.remove_process_set(ps) is False
    # A list of ranks works as well, and ids keep counting up.
    again = kolo.add_process_set([0])
    assert again.process_set_id > 0
    assert kolo.remove_process_set(again)


def test_a_refused_init_leaves_none_of_its_sets(rank, size):
    # Horovod's order: init(process_sets=[...]) with a set given twice is refused, then a good list
    # registers. The refused call leaves none of its sets behind (else the good list is refused too:
    # "ranks [0] already form process set N"), on every rank.
    if size < 2:
        pytest.skip("needs 2 ranks (a set of every rank is the global one)")
    from kolo import _C
    ids = sorted(_C.process_set_ids())
    with pytest.raises(ValueError, match=r"ranks \[0\] already form process set"):
        kolo.init(process_sets=[kolo.ProcessSet([0]), kolo.ProcessSet([1]), kolo.ProcessSet([0])])
    assert sorted(_C.process_set_ids()) == ids
    good = [kolo.ProcessSet([0]), kolo.ProcessSet([1])]
    kolo.init(process_sets=good)
    try:
        assert sorted(_C.process_set_ids()) == sorted(ids + [ps.process_set_id for ps in good])
        mine = good[0] if rank == 0 else good[1] if rank == 1 else None
        if mine is not None:
            assert kolo.allreduce(torch.tensor([rank + 1.0]), op=kolo.Sum, process_set=mine).item() == rank + 1.0
    finally:
        kolo.barrier()
        for ps in good:
            kolo.remove_process_set(ps)


def test_shutdown_forgets_every_set(rank, size):
    # The engine keeps the one registry: after shutdown a set's id means nothing, and the same
    # ProcessSet registers again after the next init.
    if size < 2:
        pytest.skip("needs 2 ranks (a set of every rank is the global one)")
    from kolo import _C
    ps = kolo.add_process_set([0])
    kolo.shutdown()
    kolo.init()
    assert ps.process_set_id is None and ps.size() is None and sorted(_C.process_set_ids()) == [0]
    assert kolo.remove_process_set(ps) is False
    assert kolo.add_process_set(ps) is ps and ps.process_set_id in _C.process_set_ids()
    assert kolo.remove_process_set(ps)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64])
def test_every_collective_in_disjoint_sets_at_once(rank, size, dtype):
    if size < 2:
        pytest.skip("needs 2 ranks")
    even, odd = halves(size)
    with registered(even, odd) as (ps_even, ps_odd):
        ps, members = (ps_even, even) if rank % 2 == 0 else (ps_odd, odd)
        me = members.index(rank)
        assert (ps.size(), ps.rank(), ps.included()) == (len(members), me, True)
        other = ps_odd if ps is ps_even else ps_even
        assert other.included() is False and other.rank() == -1

        x = torch.arange(6, dtype=dtype).reshape(3, 2) + rank
        # The same names in both sets: each set negotiates on its own.
        summed = kolo.allreduce(x, name="x", op=kolo.Sum, process_set=ps)
        assert torch.equal(summed, sum(torch.arange(6, dtype=dtype).reshape(3, 2) + r for r in members))
        if dtype.is_floating_point:
            avg = kolo.allreduce(x, name="avg", process_set=ps)
            assert torch.allclose(avg, summed / len(members))
        gathered = kolo.allgather(torch.full((rank + 1, 2), rank, dtype=dtype), name="g", process_set=ps)
        assert torch.equal(gathered, torch.cat([torch.full((r + 1, 2), r, dtype=dtype) for r in members]))
        root = members[-1]  # a job rank
        b = kolo.broadcast(torch.full((4,), rank, dtype=dtype), root_rank=root, name="b", process_set=ps)
        assert torch.equal(b, torch.full((4,), root, dtype=dtype))
        out, received = kolo.alltoall(torch.full((len(members),), rank, dtype=dtype), splits=[1] * len(members),
                                      name="a", process_set=ps)
        assert torch.equal(out, torch.tensor(members, dtype=dtype)) and received.tolist() == [1] * len(members)
        rows = torch.ones(len(members) * 2 + 1, 2, dtype=dtype) * (rank + 1)
        block = kolo.reducescatter(rows, name="rs", op=kolo.Sum, process_set=ps)
        share = 3 if me == 0 else 2  # 2n + 1 rows over n ranks: the lowest takes the extra one
        assert torch.equal(block, torch.full((share, 2), sum(r + 1 for r in members), dtype=dtype))
        grouped = kolo.grouped_allreduce([x, x * 2], name="gr", op=kolo.Sum, process_set=ps)
        assert torch.equal(grouped[1], summed * 2)
        kolo.barrier(process_set=ps)


def test_overlapping_sets_share_a_rank(rank, size):
    if size < 3:
        pytest.skip("needs 3 ranks")
    a, b = [0, 1], list(range(1, size))
    with registered(a, b) as (ps_a, ps_b):
        handles = []
        if rank in a:  # rank 1 has ops of both sets in flight at once
            handles.append((kolo.allreduce_async(torch.tensor([rank + 1.0]), name="t", op=kolo.Sum, process_set=ps_a),
                            sum(r + 1.0 for r in a)))
        if rank in b:
            handles.append((kolo.allreduce_async(torch.tensor([rank + 1.0]), name="t", op=kolo.Sum, process_set=ps_b),
                            sum(r + 1.0 for r in b)))
        for h, expected in handles:
            assert kolo.synchronize(h).item() == expected


def test_autograd_inside_a_set(rank, size):
    if size < 2:
        pytest.skip("needs 2 ranks")
    even, odd = halves(size)
    with registered(even, odd) as (ps_even, ps_odd):
        ps, members = (ps_even, even) if rank % 2 == 0 else (ps_odd, odd)
        x = torch.full((2, 3), float(rank + 1), requires_grad=True)
        y = kolo.allgather(x, name="ag", process_set=ps)
        (y * torch.arange(y.shape[0], dtype=torch.float32).unsqueeze(1)).sum().backward()
        me = members.index(rank)
        # Every member weighs the gathered rows by their index: averaged over the members (as in
        # Horovod), this rank's rows keep their weights.
        assert torch.equal(x.grad, torch.tensor([[2.0 * me] * 3, [2.0 * me + 1] * 3]))
        z = torch.ones(3, requires_grad=True)
        kolo.allreduce(z * (rank + 1), name="ar", op=kolo.Sum, process_set=ps).sum().backward()
        assert torch.equal(z.grad, torch.full((3,), float(rank + 1) * len(members)))


def test_optimizer_and_broadcasts_inside_a_set(rank, size):
    if size < 3:
        pytest.skip("needs 3 ranks (a rank outside the set)")
    torch.manual_seed(rank)
    model = torch.nn.Linear(3, 2)
    members = [0, 1]
    with registered(members) as (ps,):
        if rank in members:
            kolo.broadcast_parameters(model.state_dict(), root_rank=1, process_set=ps)
            weights = kolo.allgather(model.weight.detach().unsqueeze(0), process_set=ps)
            assert torch.equal(weights[0], weights[1])
        start = model.weight.detach().clone()
        opt = kolo.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9),
                                        named_parameters=model.named_parameters(), process_set=ps)
        data = torch.full((4, 3), float(rank + 1))
        opt.zero_grad()
        model(data).sum().backward()
        opt.step()
        # Gradient of sum(W x + b) w.r.t. W is 4 * x per output row: averaged over the set's ranks
        # inside it; a rank outside it steps on its own.
        scale = sum(r + 1.0 for r in members) / len(members) if rank in members else rank + 1.0
        assert torch.allclose(model.weight.detach(), start - 0.5 * 4 * scale)
        if rank in members:
            kolo.broadcast_optimizer_state(opt, root_rank=0, process_set=ps)
            assert kolo.broadcast_object({"r": rank}, root_rank=1, process_set=ps) == {"r": 1}
            assert kolo.allgather_object(rank * 10, process_set=ps) == [0, 10]


def test_sync_batch_norm_inside_a_set(rank, size):
    if size < 2:
        pytest.skip("needs 2 ranks")
    even, odd = halves(size)
    with registered(even, odd) as (ps_even, ps_odd):
        ps, members = (ps_even, even) if rank % 2 == 0 else (ps_odd, odd)
        rows = {r: torch.arange(12.0).reshape(4, 3) * (r + 1) + r for r in members}
        bn = kolo.SyncBatchNorm(3, process_set=ps)
        x = rows[rank].clone().requires_grad_()
        y = bn(x)
        whole = torch.cat([rows[r] for r in members]).requires_grad_()
        ref = torch.nn.BatchNorm1d(3)
        expected = ref(whole)
        me = members.index(rank)
        assert torch.allclose(y, expected[4 * me:4 * me + 4], atol=1e-6)
        assert torch.allclose(bn.running_mean, ref.running_mean) and torch.allclose(bn.running_var, ref.running_var)
        (y * y).sum().backward()
        (expected * expected).sum().backward()
        assert torch.allclose(x.grad, whole.grad[4 * me:4 * me + 4], atol=1e-5)


def test_errors_name_the_set(rank, size):
    if size < 3:
        pytest.skip("needs 3 ranks")
    with pytest.raises(kolo.KoloError, match=r"the ranks passed different ranks: \[0, 1\] on rank 0, \[1, 2\] on "):
        kolo.add_process_set([0, 1] if rank == 0 else [1, 2])
    with registered([1, 2]) as (ps,):
        if rank not in (1, 2):
            with pytest.raises(kolo.KoloValueError,
                               match=r"allreduce of tensor 'outside' on rank %d: this rank is not in process set "
                                     r"%d \(ranks \[1, 2\]\)" % (rank, ps.process_set_id)):
                kolo.allreduce(torch.ones(2), name="outside", process_set=ps)
        else:
            # The set's ranks 0 and 1 named as the job knows them.
            with pytest.raises(kolo.KoloError, match=r"process set %d: Mismatched dtype for tensor 'mixed' "
                                                     r"\(allreduce\): float32 on rank 1, float64 on rank 2\."
                                                     % ps.process_set_id):
                kolo.allreduce(torch.ones(2, dtype=torch.float32 if rank == 1 else torch.float64), name="mixed",
                               process_set=ps)
            with pytest.raises(kolo.KoloError, match="root rank 0 is not in process set"):
                kolo.broadcast(torch.ones(2), root_rank=0, process_set=ps)
        # Removing while a member still has an op of the set in flight: refused on every rank.
        pending = None
        if rank == 1:
            pending = kolo.allreduce_async(torch.ones(2), name="in.flight", op=kolo.Sum, process_set=ps)
        with pytest.raises(kolo.KoloError, match="still has ops in flight on rank 1"):
            kolo.remove_process_set(ps)
        assert ps.process_set_id is not None  # still registered
        if rank == 2:
            kolo.allreduce(torch.ones(2), name="in.flight", op=kolo.Sum, process_set=ps)
        if pending is not None:
            assert torch.equal(kolo.synchronize(pending), torch.full((2,), 2.0))


def test_a_set_across_hosts_is_hierarchical_inside_it(rank, size):
    # The first two ranks of every host: on the emulated cluster (tests/system/cluster, 2 hosts x 3 ranks,
    # KOLO_HIERARCHICAL_ALLREDUCE=1) a set spanning both hosts with 2 ranks on each, whose allreduce is
    # then the hierarchical one (inside the host, across, inside again), as its timeline shows.
    import os
    places = kolo.allgather_object((rank, kolo.local_rank(), kolo.cross_rank()))
    members = [r for r, local, _ in places if local < 2]
    if len(members) < 2 or len(members) == size:
        pytest.skip("needs a host with a third rank")
    hosts = {}
    for r, local, host in places:
        if r in members:
            hosts[host] = hosts.get(host, 0) + 1
    # Hierarchical where asked for and the set is homogeneous (as many of its ranks on every host; on
    # one host too, where the composition still runs), or by default where such a set spans hosts.
    homogeneous = len(set(hosts.values())) == 1
    asked = os.environ.get("KOLO_HIERARCHICAL_ALLREDUCE")
    hierarchical = homogeneous and (asked == "1" or (asked is None and len(hosts) > 1 and min(hosts.values()) > 1))
    path = "/tmp/kolo_ps_hier_%d_%%r.json" % size
    with registered(members) as (ps,):
        kolo.start_timeline(path)
        if rank in members:
            x = kolo.allreduce(torch.arange(7.0) + rank, name="across", op=kolo.Sum, process_set=ps)
            assert torch.equal(x, torch.arange(7.0) * len(members) + sum(members))
            g = kolo.allgather(torch.full((2,), float(rank)), name="across.g", process_set=ps)
            assert torch.equal(g, torch.tensor([float(r) for r in members for _ in range(2)]))
        kolo.stop_timeline()
        if rank in members:
            # A set's file beside the job's, named by job rank as everything is.
            set_file = path.replace("%r", str(rank)).replace(".json", ".process_set_%d.json" % ps.process_set_id)
            text = open(set_file).read()
            os.remove(set_file)
            assert ("MPI_HIERARCHICAL_ALLREDUCE" in text) == hierarchical, (hierarchical, hosts)
        os.remove(path.replace("%r", str(rank)))
