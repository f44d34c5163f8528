"""kolo.torch's collectives and DistributedOptimizer on CUDA tensors: exact results, results on the
GPU, the current stream waiting for kolo's work, and a training step matching one process."""
import torch
import torch.nn.functional as F

import kolo.torch as kolo


def cuda(values, dtype=torch.float32):
    return torch.tensor(values, dtype=dtype, device="cuda")


def test_allreduce_every_op_on_the_gpu():
    r, n = kolo.rank(), kolo.size()
    for dtype in (torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int32, torch.int64, torch.uint8):
        t = cuda([r + 1, 2 * r, 3], dtype)
        total = sum(range(1, n + 1))
        out = kolo.allreduce(t, op=kolo.Sum, name="sum.%s" % dtype)
        assert out.is_cuda and out.device == t.device
        assert out.cpu().tolist() == [total, n * (n - 1), 3 * n]
        assert kolo.allreduce(t, op=kolo.Max, name="max.%s" % dtype).cpu().tolist() == [n, 2 * (n - 1), 3]
    avg = kolo.allreduce(cuda([float(r), 1.0]), name="avg", prescale_factor=2.0, postscale_factor=0.5)
    assert avg.cpu().tolist() == [(n - 1) / 2.0, 1.0]


def test_in_place_and_grouped_ops_fuse():
    tensors = [torch.full((k + 1,), float(kolo.rank()), device="cuda") for k in range(50)]
    kolo.grouped_allreduce_(tensors, op=kolo.Sum, name="grouped")
    n = kolo.size()
    for k, t in enumerate(tensors):
        assert t.cpu().tolist() == [n * (n - 1) / 2.0] * (k + 1)


def test_allgather_alltoall_broadcast_reducescatter_stay_on_the_gpu():
    r, n = kolo.rank(), kolo.size()
    gathered = kolo.allgather(torch.full((r + 1, 2), float(r), device="cuda"), name="ag")
    assert gathered.is_cuda and gathered.shape == (n * (n + 1) // 2, 2)
    assert gathered[:, 0].cpu().tolist() == [float(q) for q in range(n) for _ in range(q + 1)]
    b = kolo.broadcast(torch.full((4,), float(r), device="cuda"), root_rank=n - 1, name="bc")
    assert b.is_cuda and b.cpu().tolist() == [float(n - 1)] * 4
    out, received = kolo.alltoall(torch.arange(n, device="cuda", dtype=torch.float32) + 10 * r, splits=[1] * n,
                                  name="a2a")
    assert out.is_cuda and out.cpu().tolist() == [10.0 * q + r for q in range(n)]
    assert received.tolist() == [1] * n
    rows = 2 * n + 1
    rs = kolo.reducescatter(torch.ones(rows, 3, device="cuda"), op=kolo.Sum, name="rs")
    assert rs.is_cuda and tuple(rs.shape) == (rows // n + (1 if r < rows % n else 0), 3)
    assert rs.cpu().eq(float(n)).all()


def test_a_side_stream_is_the_one_that_waits():
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        t = torch.full((1 << 20,), float(kolo.rank()), device="cuda")
        handle = kolo.allreduce_async_(t, op=kolo.Sum, name="side")
        out = kolo.synchronize(handle)  # side waits on the device; the host does not
        total = out.sum()
    side.synchronize()
    n = kolo.size()
    assert total.item() == (1 << 20) * n * (n - 1) / 2.0


def test_distributed_optimizer_step_matches_one_process_on_the_whole_batch():
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).cuda()
    reference = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 4)).cuda()
    reference.load_state_dict(model.state_dict())
    kolo.broadcast_parameters(model.state_dict(), root_rank=0)
    opt = kolo.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                    named_parameters=model.named_parameters())
    ref_opt = torch.optim.SGD(reference.parameters(), lr=0.1)
    n, r = kolo.size(), kolo.rank()
    g = torch.Generator().manual_seed(1)
    for step in range(5):
        x = torch.randn(4 * n, 8, generator=g).cuda()
        y = torch.randint(0, 4, (4 * n,), generator=g).cuda()
        opt.zero_grad()
        F.cross_entropy(model(x[4 * r:4 * (r + 1)]), y[4 * r:4 * (r + 1)]).backward()
        opt.step()
        ref_opt.zero_grad()
        F.cross_entropy(reference(x), y).backward()
        ref_opt.step()
    for p, q in zip(model.parameters(), reference.parameters()):
        assert torch.allclose(p, q, atol=1e-5), (p - q).abs().max().item()
