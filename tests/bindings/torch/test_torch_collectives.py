"""Every collective on torch tensors, exact results, for each dtype kolo supports."""
import pytest
import torch

import kolo.torch as kolo
from kolo import _lifecycle

DTYPES = [torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int32, torch.int64, torch.uint8,
          torch.int8, torch.int16]


def values(n, r, dtype):
    # Small integers, exact in every dtype; sums over up to 4 ranks fit int8.
    return ((torch.arange(n) * 7 + r * 3) % 6).to(dtype)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_allreduce_every_op(dtype, rank, size):
    n = 33
    per_rank = [values(n, r, torch.float64) for r in range(size)]
    expected = {
        kolo.Sum: sum(per_rank),
        kolo.Min: torch.stack(per_rank).min(0).values,
        kolo.Max: torch.stack(per_rank).max(0).values,
    }
    for op, want in expected.items():
        got = kolo.allreduce(values(n, rank, dtype), op=op, name="ar.%s.%d" % (dtype, op))
        assert got.dtype == dtype
        assert torch.equal(got, want.to(dtype)), (op, got, want)
    # Average: sum times 1/size in double, rounded to the dtype; integers truncate.
    got = kolo.allreduce(values(n, rank, dtype), name="ar.avg.%s" % dtype)
    total = sum(per_rank)
    want = (total * (1.0 / size)).to(dtype) if dtype.is_floating_point else torch.div(total, size, rounding_mode="trunc").to(dtype)
    assert torch.equal(got, want)
    # Product of ones and twos.
    got = kolo.allreduce((1 + (torch.arange(n) + rank) % 2).to(dtype), op=kolo.Product, name="ar.prod.%s" % dtype)
    want = torch.ones(n, dtype=torch.float64)
    for r in range(size):
        want = want * (1 + (torch.arange(n) + r) % 2)
    assert torch.equal(got, want.to(dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_allreduce_in_place_async_and_grouped(dtype, rank, size):
    t = values(10, rank, dtype)
    handle = kolo.allreduce_async_(t, op=kolo.Sum, name="inplace.%s" % dtype)
    out = kolo.synchronize(handle)
    assert out is t
    assert torch.equal(t, sum(values(10, r, torch.float64) for r in range(size)).to(dtype))
    tensors = [values(k + 1, rank, dtype) for k in range(5)]
    results = kolo.grouped_allreduce(tensors, op=kolo.Max, name="group.%s" % dtype)
    for k, res in enumerate(results):
        assert torch.equal(res, torch.stack([values(k + 1, r, torch.float64) for r in range(size)]).max(0).values.to(dtype))


def test_scale_factors(rank, size):
    t = values(8, rank, torch.float32)
    got = kolo.allreduce(t, op=kolo.Sum, prescale_factor=0.5, postscale_factor=4.0, name="scaled")
    assert torch.equal(got, 2.0 * sum(values(8, r, torch.float32) for r in range(size)))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_allgather_rows_differ_per_rank(dtype, rank, size):
    rows = lambda r: 0 if r == 1 else r + 1  # rank 1 contributes nothing
    mine = (torch.arange(rows(rank) * 3).reshape(rows(rank), 3) + 10 * rank).to(dtype)
    got = kolo.allgather(mine, name="gather.%s" % dtype)
    want = torch.cat([(torch.arange(rows(r) * 3).reshape(rows(r), 3) + 10 * r).to(dtype) for r in range(size)])
    assert got.dtype == dtype and torch.equal(got, want)
    handle = kolo.allgather_async(mine, name="gather.async.%s" % dtype)
    assert torch.equal(kolo.synchronize(handle), want)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_broadcast_from_every_root(dtype, rank, size):
    for root in range(size):
        t = torch.full((4, 2), rank + 1).to(dtype)
        got = kolo.broadcast(t, root, name="bcast.%s.%d" % (dtype, root))
        assert torch.equal(got, torch.full((4, 2), root + 1).to(dtype))
        assert torch.equal(t, torch.full((4, 2), rank + 1).to(dtype))  # input untouched
        kolo.broadcast_(t, root, name="bcast_.%s.%d" % (dtype, root))
        assert torch.equal(t, torch.full((4, 2), root + 1).to(dtype))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_alltoall_uneven_splits(dtype, rank, size):
    splits = [(rank + q) % 3 for q in range(size)]
    rows = [torch.tensor([[100 * rank + 10 * q + k, k]]) for q in range(size) for k in range(splits[q])]
    t = (torch.cat(rows) if rows else torch.empty(0, 2, dtype=torch.int64)).to(dtype)
    out, received = kolo.alltoall(t, splits=splits, name="a2a.%s" % dtype)
    want = [torch.tensor([[100 * r + 10 * rank + k, k]]) for r in range(size) for k in range((r + rank) % 3)]
    want = (torch.cat(want) if want else torch.empty(0, 2, dtype=torch.int64)).to(dtype)
    assert torch.equal(out, want)
    assert received.tolist() == [(r + rank) % 3 for r in range(size)]
    even = kolo.alltoall((torch.arange(2 * size) + 10 * rank).to(dtype), name="a2a.even.%s" % dtype)
    assert even.tolist() == [10 * r + 2 * rank + k for r in range(size) for k in range(2)]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_reducescatter_odd_rows(dtype, rank, size):
    t = values(7 * 2, rank, dtype).reshape(7, 2)
    got = kolo.reducescatter(t, op=kolo.Sum, name="rs.%s" % dtype)
    total = sum(values(14, r, torch.float64) for r in range(size)).reshape(7, 2)
    first = sum(7 // size + (1 if r < 7 % size else 0) for r in range(rank))
    mine = 7 // size + (1 if rank < 7 % size else 0)
    assert torch.equal(got, total[first:first + mine].to(dtype))


def test_poll_and_barrier(rank):
    handle = kolo.allreduce_async(torch.ones(3), name="polled")
    kolo.synchronize(handle)
    with pytest.raises(ValueError, match="unknown handle"):
        kolo.poll(handle)
    kolo.barrier()


def test_allgather_output_outlives_kolo_buffer(rank, size):
    import gc
    got = kolo.allgather(torch.full((2,), float(rank)), name="lifetime")
    gc.collect()
    assert got.tolist() == [float(r) for r in range(size) for _ in range(2)]


@pytest.mark.parametrize("name", ["fp16", "bf16"])
def test_compression_is_done_by_kolo_in_its_pack_and_equals_casting_in_python(name, rank, size):
    compression = getattr(kolo.Compression, name)
    t = torch.linspace(-3, 3, 1001) * (rank + 1) + 1.0 / 4096  # 1/4096 does not survive 16 bits
    in_kolo = kolo.allreduce(t, op=kolo.Sum, compression=compression, name="compressed." + name)
    assert in_kolo.dtype == torch.float32
    # What Horovod does: cast in Python, reduce the 16-bit tensor, cast back; the same sums. (An
    # Average differs a little: kolo divides after widening back to float32, not in 16 bits.)
    wire = compression.wire_dtype
    by_hand = kolo.allreduce(t.to(wire), op=kolo.Sum, name="by_hand." + name).to(torch.float32)
    assert torch.equal(in_kolo, by_hand)
    assert not torch.equal(in_kolo, kolo.allreduce(t, op=kolo.Sum, name="uncompressed." + name))


def test_a_compressor_of_the_users_runs_around_the_collective(rank, size):
    class Negate(kolo.Compression.none):
        kolo_code = None

        @staticmethod
        def compress(tensor):
            return -tensor, None

        @staticmethod
        def decompress(tensor, ctx):
            return -tensor

    got = kolo.allreduce(torch.full((3,), float(rank)), op=kolo.Sum, compression=Negate, name="user.compressor")
    assert got.tolist() == [float(sum(range(size)))] * 3


def test_horovods_queries_answer_truthfully(rank, size):
    summary = _lifecycle.build_summary()
    # One world or the other, as the launcher decided (KOLO_CONTROLLER); MPI's threads only in MPI's.
    assert kolo.mpi_built() and kolo.mpi_enabled() != kolo.gloo_enabled()
    assert kolo.mpi_threads_supported() == kolo.mpi_enabled()
    assert kolo.gloo_built() == ("[X] Gloo" in summary) and (kolo.gloo_built() or not kolo.gloo_enabled())
    assert not (kolo.rocm_built() or kolo.ddl_built() or kolo.ccl_built())
    assert kolo.is_homogeneous()
    assert kolo.cuda_built() == ("[X] CUDA" in summary)
    nccl = kolo.nccl_built()
    assert (nccl > 0) == ("[X] NCCL" in summary)
    if nccl:
        version = summary.split("[X] NCCL")[1].split()[0]  # "2.28.9"
        major, minor, patch = (int(v) for v in version.split("."))
        assert nccl == major * 10000 + minor * 100 + patch
    assert kolo.HorovodInternalError is kolo.KoloError


def test_a_timeline_started_and_stopped_from_python(rank, size, tmp_path):
    path = kolo.broadcast_object(str(tmp_path / "timeline_%r.json"), root_rank=0, name="timeline.path")
    kolo.start_timeline(path, mark_cycles=True)
    kolo.allreduce(torch.ones(4), name="traced.in.python")
    kolo.stop_timeline()
    import json
    events = json.load(open(path.replace("%r", str(rank))))
    names = {e.get("name") for e in events} | {e.get("args", {}).get("name") for e in events}
    assert "traced.in.python" in names and "CYCLE_START" in names
    with pytest.raises(kolo.KoloValueError, match="cannot write"):
        kolo.start_timeline("/nonexistent/dir/t_%r.json")


def test_grouped_allgather_and_reducescatter(rank, size):
    a = torch.full((rank + 1, 2), float(rank))
    b = torch.arange(3, dtype=torch.int64) + 10 * rank
    ga, gb = kolo.grouped_allgather([a, b], name="grouped.ag")
    assert ga.tolist() == [[float(r)] * 2 for r in range(size) for _ in range(r + 1)]
    assert gb.tolist() == [10 * r + k for r in range(size) for k in range(3)]
    handle = kolo.grouped_allgather_async([a], name="grouped.ag.async")
    assert kolo.synchronize(handle)[0].shape == (size * (size + 1) // 2, 2)

    rows = 2 * size + 1
    x = torch.full((rows, 3), float(rank + 1))
    y = torch.ones(size, dtype=torch.int32)
    rx, ry = kolo.grouped_reducescatter([x, y], op=kolo.Sum, name="grouped.rs")
    mine = rows // size + (1 if rank < rows % size else 0)
    assert rx.shape == (mine, 3) and rx.eq(size * (size + 1) / 2.0).all()
    assert ry.tolist() == [size]
    (avg,) = kolo.synchronize(kolo.grouped_reducescatter_async([x], name="grouped.rs.async"))
    assert avg.eq((size + 1) / 2.0).all()


def test_grouped_allgather_gradient(rank, size):
    a = torch.full((2,), float(rank + 1), requires_grad=True)
    b = torch.full((1,), float(rank + 1), requires_grad=True)
    ga, gb = kolo.grouped_allgather([a, b], name="grouped.grad")
    (ga.sum() * 2 + gb.sum() * 3).backward()
    # Each rank's loss used every rank's rows: the gradient is the average over ranks of d(loss)/d(rows),
    # as in Horovod.
    assert a.grad.tolist() == [2.0] * 2 and b.grad.tolist() == [3.0]


@pytest.mark.parametrize("op", ["Sum", "Average"])
def test_sparse_allreduce(op, rank, size):
    # Rank r sets row r (and row 0) of a 5 x 2 tensor; rows may repeat across ranks.
    indices = torch.tensor([[0, rank % 5], [1, 0]])
    t = torch.sparse_coo_tensor(indices, torch.tensor([1.0, float(rank + 1)]), (5, 2))
    got = kolo.synchronize(kolo.sparse_allreduce_async(t, name="sparse." + op, op=getattr(kolo, op)))
    assert got.is_sparse
    want = torch.zeros(5, 2)
    for r in range(size):
        want[0, 1] += 1.0
        want[r % 5, 0] += float(r + 1)
    if op == "Average":
        want /= size
    assert torch.equal(got.to_dense(), want)
    with pytest.raises(kolo.KoloValueError, match="expected a sparse COO tensor"):
        kolo.sparse_allreduce_async(torch.ones(2), name="dense")


@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_distributed_optimizer_with_a_sparse_embedding_matches_one_process(sparse_as_dense, rank, size):
    def model():
        torch.manual_seed(5)
        return torch.nn.Sequential(torch.nn.Embedding(10, 4, sparse=True), torch.nn.Flatten(), torch.nn.Linear(8, 1))

    g = torch.Generator().manual_seed(11)
    batches = [(torch.randint(0, 10, (2 * size, 2), generator=g), torch.randn(2 * size, 1, generator=g))
               for _ in range(4)]
    reference = model()
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    for x, y in batches:
        ref_opt.zero_grad()
        torch.nn.functional.mse_loss(reference(x), y).backward()
        ref_opt.step()
    m = model()
    opt = kolo.DistributedOptimizer(torch.optim.SGD(m.parameters(), lr=0.1), named_parameters=m.named_parameters(),
                                    sparse_as_dense=sparse_as_dense)
    for x, y in batches:
        opt.zero_grad()
        torch.nn.functional.mse_loss(m(x[2 * rank:2 * rank + 2]), y[2 * rank:2 * rank + 2]).backward()
        opt.step()
    for p, q in zip(m.parameters(), reference.parameters()):
        assert torch.allclose(p, q, atol=1e-6), (p - q).abs().max().item()


@pytest.mark.parametrize("sparse_as_dense", [False, True])
def test_sparse_adam_gets_sparse_gradients_back(sparse_as_dense, rank, size):
    # SparseAdam takes sparse gradients only: with sparse_as_dense they are reduced dense and handed
    # back sparse (Horovod's behaviour), equal to the sparse reduction.
    torch.manual_seed(3)
    embedding = torch.nn.Embedding(6, 2, sparse=True)
    opt = kolo.DistributedOptimizer(torch.optim.SparseAdam(list(embedding.parameters()), lr=0.1),
                                    sparse_as_dense=sparse_as_dense)
    assert sorted(opt._parameter_names.values()) == ["param.0"]  # Horovod's attribute
    embedding(torch.tensor([rank % 6, 5])).sum().backward()
    opt.synchronize()
    grad = embedding.weight.grad
    assert grad.is_sparse
    expected = torch.zeros(6, 2)
    for r in range(size):
        expected[r % 6] += 1.0 / size
    expected[5] += 1.0
    assert torch.allclose(grad.to_dense(), expected)
    with opt.skip_synchronize():
        opt.step()


def test_a_sparse_handle_is_callable(rank, size):
    t = torch.sparse_coo_tensor(torch.tensor([[rank % 3]]), torch.tensor([1.0]), (3,))
    handle = kolo.sparse_allreduce_async(t, name="sparse.callable", op=kolo.Sum)
    assert torch.equal(handle().to_dense(), sum(torch.eye(3)[r % 3] for r in range(size)))


def test_bools_reduce_logically_and_integers_scale(rank, size):
    flags = torch.tensor([rank == 0, True, False])
    assert kolo.allreduce(flags, op=kolo.Sum, name="bool.or").tolist() == [True, True, False]
    assert kolo.allreduce(flags, op=kolo.Min, name="bool.and").tolist() == [size == 1, True, False]
    assert kolo.broadcast(flags, root_rank=0, name="bool.bcast").tolist() == [True, True, False]
    assert kolo.allgather(flags, name="bool.gather").dtype == torch.bool
    # Integers scale as in Horovod: multiplied in double, truncated toward zero.
    got = kolo.allreduce(torch.tensor([3, -3], dtype=torch.int32), op=kolo.Sum, prescale_factor=0.5,
                         postscale_factor=3.0, name="int.scaled")
    assert got.tolist() == [3 * size, -3 * size]


def test_float32_scaling_is_torch_arithmetic(size):
    # Scaled in float32 with the factor rounded to float, as torch's `tensor * factor` and Horovod do:
    # bit for bit what a script computes by hand.
    factor = 0.3710550393574891
    t = torch.arange(-50.0, 50.0) * 1.37
    summed = kolo.allreduce(t, op=kolo.Sum, prescale_factor=factor, name="f32.scale")
    expected = (t * factor) * size  # exact: size is at most 3 and the products are whole multiples
    assert torch.equal(summed, sum([t * factor] * size)) and torch.allclose(summed, expected)
    post = kolo.allreduce(t, op=kolo.Sum, postscale_factor=factor, name="f32.post")
    assert torch.equal(post, sum([t] * size) * factor)


def test_average_and_half_sums_are_horovods_arithmetic(size):
    # A float32 Average multiplies the sum by the float reciprocal of the rank count (Horovod's
    # postscale_factor / size, applied in float), which at 3 ranks can differ from `sum / 3` in the last
    # ulp; a float16 sum rounds to float16 at every step (Horovod's float16_sum). Bit for bit Horovod.
    t = torch.arange(-60.0, 60.0) * 1.25
    avg = kolo.allreduce(t, op=kolo.Average, name="f32.avg.horovod")
    assert torch.equal(avg, sum([t] * size) * torch.tensor(1.0 / size, dtype=torch.float32))
    h = (torch.arange(-60.0, 60.0) * 0.37).half()
    summed = kolo.allreduce(h, op=kolo.Sum, name="f16.sum.horovod")
    acc = h.clone()
    for _ in range(size - 1):
        acc = (acc.float() + h.float()).half()
    assert torch.equal(summed, acc)


@pytest.mark.skipif(not hasattr(torch, "uint16"), reason="torch %s has no uint16 (torch 2.3 and later)"
                    % torch.__version__)
def test_uint16_tensors_reduce_gather_and_broadcast_exactly(rank, size):
    # Values near the top of the range: a path that went through a signed 16-bit type would wrap.
    t = torch.tensor([65535 - rank, rank, 40000], dtype=torch.uint16)
    maxed = kolo.allreduce(t, op=kolo.Max, name="u16.max")
    assert maxed.dtype == torch.uint16 and maxed.tolist() == [65535, size - 1, 40000]
    assert kolo.allreduce(t, op=kolo.Min, name="u16.min").tolist() == [65536 - size, 0, 40000]
    small = torch.tensor([rank + 1, 1000], dtype=torch.uint16)
    assert kolo.allreduce(small, op=kolo.Sum, name="u16.sum").tolist() == [size * (size + 1) // 2, 1000 * size]
    gathered = kolo.allgather(t[:1], name="u16.gather")
    assert gathered.dtype == torch.uint16 and gathered.tolist() == [65535 - r for r in range(size)]
    assert kolo.broadcast(t, root_rank=size - 1, name="u16.bcast").tolist() == [65536 - size, size - 1, 40000]


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64, torch.int32, torch.int64, torch.float16, torch.uint8])
@pytest.mark.parametrize("shape", [(), (1,), (3, 5)])
def test_allreduce_in_place_of_a_cpu_tensor_is_exact(dtype, shape, rank, size):
    # allreduce_ of a contiguous CPU tensor is one call into kolo with no descriptors; a parameter (a
    # subclass) and a strided view go the general way. Every way gives the same exact sums.
    count = max(1, int(torch.tensor(shape).prod().item()) if shape else 1)
    base = (torch.arange(count) % 5 + rank + 1).reshape(shape).to(dtype)
    expected = sum((torch.arange(count) % 5 + r + 1) for r in range(size)).reshape(shape).to(dtype)
    plain = base.clone()
    assert kolo.allreduce_(plain, op=kolo.Sum, name="in_place.%s.%s" % (dtype, shape)) is plain
    assert torch.equal(plain, expected)
    parameter = torch.nn.Parameter(base.clone(), requires_grad=False)
    kolo.allreduce_(parameter, op=kolo.Sum, name="in_place.param.%s.%s" % (dtype, shape))
    assert torch.equal(parameter.data, expected)
    if dtype.is_floating_point:
        averaged = base.clone()
        kolo.allreduce_(averaged, name="in_place.avg.%s.%s" % (dtype, shape), prescale_factor=2.0)
        torch.testing.assert_close(averaged, (expected.double() * 2 / size).to(dtype), rtol=1e-3, atol=1e-3)
