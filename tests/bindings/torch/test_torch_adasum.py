"""Adasum in kolo.torch: allreduce(op=Adasum) against a NumPy reference of the algorithm (the pairwise
combination up the tree of ranks, ranks past a power of two folded in first), exact where the
arithmetic is, and DistributedOptimizer(op=Adasum) (Horovod's delta optimizer) against a simulation
of every rank's optimizer."""
import copy

import numpy as np
import pytest
import torch

import kolo.torch as kolo


def pair(a, b, dtype):
    """One Adasum step on one tensor, in float64, rounded as kolo rounds (float for 16-bit types)."""
    a64, b64 = a.astype(np.float64).ravel(), b.astype(np.float64).ravel()
    dot, aa, bb = a64 @ b64, a64 @ a64, b64 @ b64
    tiny = np.sqrt(np.finfo(np.float64).tiny)
    ca = 1.0 - dot / aa * 0.5 if aa >= tiny else 1.0
    cb = 1.0 - dot / bb * 0.5 if bb >= tiny else 1.0
    work = np.float64 if dtype == np.float64 else np.float32
    return (ca * a64 + cb * b64).astype(work).reshape(a.shape)


def tree(tensors, dtype=np.float32):
    """Adasum of one tensor per rank: rank p + i folds into rank i (p the largest power of two),
    then (0 + 1) + (2 + 3) ..."""
    v = [t.astype(np.float64 if dtype == np.float64 else np.float32) for t in tensors]
    p = 1
    while p * 2 <= len(v):
        p *= 2
    for r in range(p, len(v)):
        v[r - p] = pair(v[r - p], v[r], dtype)
    level = 1
    while level < p:
        for r in range(0, p, 2 * level):
            v[r] = pair(v[r], v[r + level], dtype)
        level *= 2
    return v[0].astype(dtype)


def inputs(r, shapes, dtype):
    rng = np.random.default_rng(1000 + r)
    return [(rng.normal(size=s) * (1 + r)).astype(dtype) for s in shapes]


SHAPES = [(3,), (17, 5), (1,), (1000,)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adasum_allreduce_matches_the_numpy_reference(rank, size, dtype):
    mine = [torch.from_numpy(x) for x in inputs(rank, SHAPES, dtype)]
    handles = [kolo.allreduce_async(t, name="adasum.%s.%d" % (np.dtype(dtype).name, i), op=kolo.Adasum)
               for i, t in enumerate(mine)]  # fused: each tensor keeps its own coefficients
    results = [kolo.synchronize(h) for h in handles]
    every = [inputs(r, SHAPES, dtype) for r in range(size)]
    tol = 1e-12 if dtype == np.float64 else 1e-5
    for i, result in enumerate(results):
        np.testing.assert_allclose(result.numpy(), tree([every[r][i] for r in range(size)], dtype), rtol=tol,
                                   atol=tol)


def test_adasum_is_exact_where_the_arithmetic_is(rank, size):
    same = torch.arange(6, dtype=torch.float32) - 2.5
    assert torch.equal(kolo.allreduce(same, name="adasum.same", op=kolo.Adasum), same)
    basis = torch.zeros(size, dtype=torch.float64)
    basis[rank] = 2.0 ** rank  # orthogonal: every step is the plain sum
    assert kolo.allreduce(basis, name="adasum.basis", op=kolo.Adasum).tolist() == [2.0 ** r for r in range(size)]
    half = torch.full((4,), 3.0, dtype=torch.float16)
    assert torch.equal(kolo.allreduce(half, name="adasum.fp16", op=kolo.Adasum, compression=kolo.Compression.fp16),
                       half)


def test_adasum_errors_name_the_tensor_and_rank(rank, size):
    with pytest.raises(kolo.KoloValueError, match="allreduce of tensor 'adasum.int' on rank %d: Adasum combines "
                                                  "floating-point tensors" % rank):
        kolo.allreduce(torch.ones(3, dtype=torch.int32), name="adasum.int", op=kolo.Adasum)
    x = torch.ones(3, requires_grad=True)
    y = kolo.allreduce(x, name="adasum.grad", op=kolo.Adasum)
    with pytest.raises(kolo.KoloError, match="gradient of an allreduce with op Adasum is not defined"):
        y.sum().backward()


def batch(r, step):
    g = torch.Generator().manual_seed(100 * step + r)
    return torch.randn(8, 4, generator=g), torch.randn(8, 2, generator=g)


def make_model():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Tanh(), torch.nn.Linear(3, 2))


@pytest.mark.parametrize("optimizer_class", [lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
                                             lambda p: torch.optim.Adam(p, lr=0.01)])
def test_adasum_optimizer_combines_every_ranks_step(rank, size, optimizer_class):
    model = make_model()
    optimizer = kolo.DistributedOptimizer(optimizer_class(model.parameters()), named_parameters=model.named_parameters(),
                                          op=kolo.Adasum)
    # The simulation: every rank's model and optimizer here, each stepping on its own batch from the
    # shared parameters, their deltas combined per tensor with the reference.
    replicas = [make_model() for _ in range(size)]
    optimizers = [optimizer_class(m.parameters()) for m in replicas]
    shared = [p.detach().numpy().copy() for p in make_model().parameters()]
    for step in range(3):
        x, y = batch(rank, step)
        optimizer.zero_grad()
        torch.nn.functional.mse_loss(model(x), y).backward()
        optimizer.step()
        deltas = []
        for r, (m, o) in enumerate(zip(replicas, optimizers)):
            with torch.no_grad():
                for p, value in zip(m.parameters(), shared):
                    p.copy_(torch.from_numpy(value))
            o.zero_grad()
            xr, yr = batch(r, step)
            torch.nn.functional.mse_loss(m(xr), yr).backward()
            o.step()
            deltas.append([p.detach().numpy() - value for p, value in zip(m.parameters(), shared)])
        shared = [value + tree([deltas[r][i] for r in range(size)]) for i, value in enumerate(shared)]
        for p, want in zip(model.parameters(), shared):
            np.testing.assert_allclose(p.detach().numpy(), want, rtol=1e-5, atol=1e-6)
    assert copy.deepcopy(optimizer.state_dict())["state"]  # the optimizer's own state is kept
