"""torch.distributed's collectives on the kolo backend: exact values on every rank, every dtype kolo has, blocking,
async and through the future."""
import pytest
import torch
import torch.distributed as dist

from kolo.torch.backend._torch_version import HANDS_NEW_GROUP

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.int8,
          torch.uint8]


def test_the_backend_is_kolo(rank, size):
    assert dist.get_backend() == "kolo"
    assert dist.get_rank() == kolo_rank() and dist.get_world_size() == kolo_size()


def kolo_rank():
    import kolo.torch
    return kolo.torch.rank()


def kolo_size():
    import kolo.torch
    return kolo.torch.size()


@pytest.mark.parametrize("dtype", DTYPES)
def test_all_reduce_sums_every_dtype(rank, size, dtype):
    t = torch.full((5,), rank + 1).to(dtype)
    dist.all_reduce(t)
    assert t.tolist() == [size * (size + 1) // 2] * 5
    assert t.dtype == dtype


def test_complex_tensors_reduce_as_their_real_pairs(rank, size):
    t = torch.full((2,), complex(rank, 1))
    dist.all_reduce(t)
    assert t.tolist() == [complex(sum(range(size)), size)] * 2


@pytest.mark.parametrize("op, expected", [
    (dist.ReduceOp.SUM, lambda n: sum(range(1, n + 1))),
    (dist.ReduceOp.PRODUCT, lambda n: 1 if n == 1 else __import__("math").factorial(n)),
    (dist.ReduceOp.MIN, lambda n: 1),
    (dist.ReduceOp.MAX, lambda n: n),
    (dist.ReduceOp.AVG, lambda n: (n + 1) / 2),
])
def test_all_reduce_ops(rank, size, op, expected):
    t = torch.full((3,), float(rank + 1), dtype=torch.float64)
    dist.all_reduce(t, op=op)
    assert t.tolist() == [expected(size)] * 3


def test_all_reduce_async_wait_and_future(rank, size):
    a, b = torch.full((4,), float(rank)), torch.full((1000,), 1.0)
    work_a = dist.all_reduce(a, async_op=True)
    work_b = dist.all_reduce(b, async_op=True)
    assert work_a.wait()
    result = work_b.get_future().wait()
    assert a.tolist() == [float(sum(range(size)))] * 4
    assert result[0] is b and b.tolist() == [float(size)] * 1000
    assert work_a.is_completed() and work_b.is_completed()


def test_many_ops_of_one_shape_in_flight_each_end_exact(rank, size):
    # 37 async all_reduces of one shape before any is waited for, waited for in reverse, some through futures.
    tensors = [torch.full((3,), float(rank + i)) for i in range(37)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    futures = [w.get_future() for w in works[::7]]  # some completed by the futures' thread meanwhile
    for w in reversed(works):
        assert w.wait()
    for f in futures:
        f.wait()
    for i, t in enumerate(tensors):
        assert t.tolist() == [float(sum(range(size)) + size * i)] * 3


def test_two_groups_of_every_rank_keep_their_ops_apart(rank, size):
    # Two kolo groups of the same ranks share a kolo process set; their ops interleave and stay apart.
    first, second = dist.new_group(backend="kolo"), dist.new_group(backend="kolo")
    a, b = torch.full((2,), float(rank)), torch.full((2,), 10.0 * rank)
    work_a = dist.all_reduce(a, group=first, async_op=True)
    work_b = dist.all_reduce(b, group=second, async_op=True)
    work_b.wait()
    work_a.wait()
    assert a.tolist() == [float(sum(range(size)))] * 2 and b.tolist() == [10.0 * sum(range(size))] * 2


def test_a_future_chains(rank, size):
    t = torch.ones(2)
    fut = dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] * 10)
    assert fut.wait().tolist() == [10.0 * size] * 2


def test_all_reduce_coalesced(rank, size):
    tensors = [torch.full((2,), float(rank)), torch.full((3,), 1.0)]
    dist.all_reduce_coalesced(tensors)
    assert tensors[0].tolist() == [float(sum(range(size)))] * 2 and tensors[1].tolist() == [float(size)] * 3


def test_all_reduce_of_a_sparse_tensor_sums_it_in_place(rank, size):
    # Rank r holds r + 1 at [r, 0] and 1 at [0, 1]: the sum, coalesced, replaces the tensor's contents.
    t = torch.sparse_coo_tensor([[rank, 0], [0, 1]], [float(rank + 1), 1.0], (size, 2))
    dist.all_reduce(t)
    assert t.is_sparse and t.is_coalesced()
    expected = torch.zeros(size, 2)
    expected[:, 0] = torch.arange(1.0, size + 1)
    expected[0, 1] = float(size)
    assert t.to_dense().tolist() == expected.tolist()


def test_all_gather_coalesced_fills_one_list_per_rank(rank, size):
    # torch's layout: output_lists[r] holds rank r's inputs, one tensor per input.
    inputs = [torch.full((1,), float(rank)), torch.full((2, 2), float(10 * rank))]
    output_lists = [[torch.empty(1), torch.empty(2, 2)] for _ in range(size)]
    dist.all_gather_coalesced(output_lists, inputs)
    assert [[o.tolist() for o in outs] for outs in output_lists] == \
        [[[float(r)], [[float(10 * r)] * 2] * 2] for r in range(size)]


def test_broadcast_from_every_root(rank, size):
    for root in range(size):
        t = torch.full((3,), float(rank * 7))
        dist.broadcast(t, root)
        assert t.tolist() == [float(root * 7)] * 3


def test_all_gather_into_a_list_and_into_one_tensor(rank, size):
    outputs = [torch.empty(2, 2) for _ in range(size)]
    dist.all_gather(outputs, torch.full((2, 2), float(rank)))
    assert [o.tolist() for o in outputs] == [[[float(r)] * 2] * 2 for r in range(size)]
    flat = torch.empty(size * 3, dtype=torch.int64)
    dist.all_gather_into_tensor(flat, torch.arange(3) + 10 * rank)
    assert flat.tolist() == [10 * r + i for r in range(size) for i in range(3)]
    stacked = torch.empty(size, 3)
    dist.all_gather_into_tensor(stacked, torch.full((3,), float(rank)))
    assert stacked.tolist() == [[float(r)] * 3 for r in range(size)]


def test_reduce_scatter_list_and_tensor_with_avg(rank, size):
    out = torch.empty(2)
    dist.reduce_scatter(out, [torch.full((2,), float(rank + i)) for i in range(size)])
    assert out.tolist() == [float(sum(r + rank for r in range(size)))] * 2
    out = torch.empty(2)
    dist.reduce_scatter_tensor(out, torch.arange(2.0 * size) * (rank + 1), op=dist.ReduceOp.AVG)
    scale = (size + 1) / 2
    assert out.tolist() == [(2 * rank) * scale, (2 * rank + 1) * scale]


def test_all_to_all_single_even_and_with_splits(rank, size):
    out = torch.empty(size)
    dist.all_to_all_single(out, torch.arange(float(size)) + 100 * rank)
    assert out.tolist() == [100.0 * r + rank for r in range(size)]
    # Rank r sends r + 1 rows to each rank; so it receives (sender + 1) rows from each.
    send = torch.full(((rank + 1) * size,), float(rank))
    out = torch.empty(sum(r + 1 for r in range(size)))
    dist.all_to_all_single(out, send, [r + 1 for r in range(size)], [rank + 1] * size)
    assert out.tolist() == [float(r) for r in range(size) for _ in range(r + 1)]


def test_all_to_all_lists(rank, size):
    outputs = [torch.empty(2) for _ in range(size)]
    dist.all_to_all(outputs, [torch.full((2,), float(10 * rank + r)) for r in range(size)])
    assert [o.tolist() for o in outputs] == [[float(10 * r + rank)] * 2 for r in range(size)]


def test_reduce_gather_scatter_at_the_root(rank, size):
    t = torch.full((2,), float(rank + 1))
    dist.reduce(t, dst=size - 1)
    assert t.tolist() == ([float(size * (size + 1) // 2)] * 2 if rank == size - 1 else [float(rank + 1)] * 2)
    gathered = [torch.empty(1) for _ in range(size)] if rank == 0 else None
    dist.gather(torch.full((1,), float(rank)), gathered, dst=0)
    if rank == 0:
        assert [g.item() for g in gathered] == [float(r) for r in range(size)]
    out = torch.empty(2)
    dist.scatter(out, [torch.full((2,), float(r * 3)) for r in range(size)] if rank == 0 else None, src=0)
    assert out.tolist() == [float(rank * 3)] * 2


def test_barrier_and_object_collectives(rank, size):
    dist.barrier()
    objects = [{"from": "root", "n": 5}] if rank == 0 else [None]
    dist.broadcast_object_list(objects, src=0)
    assert objects == [{"from": "root", "n": 5}]
    everyone = [None] * size
    dist.all_gather_object(everyone, ("rank", rank))
    assert everyone == [("rank", r) for r in range(size)]


@pytest.mark.skipif(not HANDS_NEW_GROUP, reason="torch %s makes a group on its members only: kolo groups of some "
                                                "ranks need torch 2.13 or later" % torch.__version__)
def test_new_group_and_new_subgroups(rank, size):
    evens = [r for r in range(size) if r % 2 == 0]
    group = dist.new_group(evens)
    if rank in evens:
        t = torch.full((1,), float(rank))
        dist.all_reduce(t, group=group)
        assert t.item() == float(sum(evens))
        b = torch.full((1,), float(rank))
        dist.broadcast(b, src=evens[-1], group=group)  # a global rank, as torch's API takes it
        assert b.item() == float(evens[-1])
    mine, _ = dist.new_subgroups(group_size=1)
    t = torch.full((1,), float(rank))
    dist.all_reduce(t, group=mine)
    assert t.item() == float(rank) and dist.get_world_size(mine) == 1
    t = torch.ones(1)
    dist.all_reduce(t)  # the world goes on after the groups' ops
    assert t.item() == float(size)



def test_torchs_default_device_leaves_kolos_own_tensors_on_the_cpu(rank, size):
    # torch.set_default_device("cuda") is common in model code; kolo's own tensors (the names' period check, the
    # splits an alltoall received) stay on the CPU whatever it is. "meta" stands in for it here, on any machine: an op
    # on a meta tensor fails, and a meta tensor holds no values.
    import kolo.torch as kolo
    from kolo.torch.backend._names import CHECK_EVERY, FIRST_CHECK
    group = dist.new_group(backend="kolo")
    sample = torch.ones(1, device="cpu")
    before = torch.get_default_device()
    torch.set_default_device("meta")
    try:
        for _ in range(FIRST_CHECK):  # the names of the group's ops, to its first period check (an allreduce)
            group.names.take_one(sample)
        _, received = kolo.alltoall(torch.full(((rank + 1) * size,), float(rank), device="cpu"),
                                    splits=[rank + 1] * size)
    finally:
        torch.set_default_device(before)
    assert group.names._check_at == FIRST_CHECK + CHECK_EVERY  # the check ran
    assert received.device.type == "cpu" and received.tolist() == [r + 1 for r in range(size)]
    dist.destroy_process_group(group)
