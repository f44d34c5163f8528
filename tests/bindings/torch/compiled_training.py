"""What tests/bindings/torch/test_torch_compile.py (CPU) and tests/bindings/cuda/torch/test_torch_compile_cuda.py
(CUDA) share: a small MLP, deterministic global batches, the one-process reference that trains an uncompiled copy on the
whole batches with plain torch, and the checks made once every rank has trained.

The reference and the kolo run see the same numbers: every rank's model starts from rank 0's weights
(broadcast), each rank takes an equal share of every global batch, and the loss is a mean, so the average
of the ranks' shard gradients is the whole batch's gradient.
"""
import copy
import importlib.util
import os
import sysconfig

import torch
import torch.nn.functional as F

STEPS = 6
ROWS_PER_RANK = 8
FEATURES, HIDDEN, CLASSES = 12, 32, 5

# float32 tolerance of the comparison with the reference. Not exact: the reference's gradient is one
# matmul over all rows, kolo's the average of per-shard gradients (another summation order), and
# inductor fuses LayerNorm, GELU and the loss into kernels whose reductions run in another order than
# eager's. Each differs from the other by a few float32 ulps (about 1e-7 relative) per step; 1e-5 leaves
# room for STEPS steps of that (seen on the CPU with torch 2.15: 4e-8 at most), and is far below what a
# gradient that was not averaged gives (about 0.09: checked below).
RTOL = ATOL = 1e-5


def compile_skip_reason(device_type):
    """Why torch.compile cannot be tested here (None when it can)."""
    if not hasattr(torch, "compile"):
        return "torch %s has no torch.compile (torch 2.0 and later have it)" % torch.__version__
    if device_type == "cpu":
        # Inductor compiles C++ kernels for CPU tensors with a C++ compiler, against Python.h.
        try:
            try:
                from torch._inductor.cpp_builder import get_cpp_compiler
            except ImportError:  # older torch 2.x
                from torch._inductor.codecache import cpp_compiler as get_cpp_compiler
            get_cpp_compiler()
        except Exception as e:  # noqa: BLE001 - InvalidCxxCompiler, or whatever an older torch raises
            return "no C++ compiler usable by torch.compile's inductor backend (%s: %s)" % (type(e).__name__, e)
        include = sysconfig.get_path("include")
        if not os.path.exists(os.path.join(include, "Python.h")):
            return "no Python.h in %s, which inductor's C++ kernels include (install python3-dev)" % include
    elif importlib.util.find_spec("triton") is None:
        return "no Triton, which torch.compile's inductor backend needs for CUDA tensors"
    return None


def make_model(device):
    """The same weights on every call (every rank): seeded."""
    torch.manual_seed(1234)
    return torch.nn.Sequential(
        torch.nn.Linear(FEATURES, HIDDEN), torch.nn.LayerNorm(HIDDEN), torch.nn.GELU(),
        torch.nn.Linear(HIDDEN, HIDDEN), torch.nn.Tanh(),
        torch.nn.Linear(HIDDEN, CLASSES)).to(device=device, dtype=torch.float32)


def global_batches(size, device):
    """STEPS global batches of ROWS_PER_RANK * size rows, the same on every rank (made on the CPU with
    their own generator, then moved)."""
    g = torch.Generator().manual_seed(99)
    rows = ROWS_PER_RANK * size
    batches = []
    for _ in range(STEPS):
        x = torch.randn(rows, FEATURES, generator=g)
        y = torch.randint(0, CLASSES, (rows,), generator=g)
        batches.append((x.to(device), y.to(device)))
    return batches


def make_optimizer(params):
    return torch.optim.SGD(params, lr=0.1, momentum=0.9)


def shard(rank):
    return slice(rank * ROWS_PER_RANK, (rank + 1) * ROWS_PER_RANK)


def train(model, optimizer, batches, rows=slice(None)):
    """Each step: the mean loss over `rows` of the global batch, backward, step."""
    for x, y in batches:
        optimizer.zero_grad()
        F.cross_entropy(model(x[rows]), y[rows]).backward()
        optimizer.step()


def train_plain(model, batches, rows=slice(None)):
    """A copy of `model` (uncompiled, no kolo) trained with plain torch on `rows` of every batch."""
    copied = copy.deepcopy(model)
    train(copied, make_optimizer(copied.parameters()), batches, rows)
    return copied


def reset_compile_counters():
    import torch._dynamo
    from torch._dynamo.utils import counters
    torch._dynamo.reset()
    counters.clear()


def compile_counts():
    """What torch.compile did since reset_compile_counters(): graphs captured by dynamo, graphs that
    AOTAutograd compiled (forward and backward), graph breaks (reasons)."""
    from torch._dynamo.utils import counters
    return {"graphs": counters["stats"]["unique_graphs"], "aot_autograd_ok": counters["aot_autograd"]["ok"],
            "graph_breaks": dict(counters["graph_break"])}


def train_compiled_with_kolo(kolo, model, batches, rank):
    """The user's script: torch.compile, broadcast_parameters, DistributedOptimizer, then this rank's share
    of every batch. Ranks other than 0 start from other weights, which the broadcast must fix. The
    compiled model."""
    if rank != 0:
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.5 * rank)
    reset_compile_counters()
    compiled = torch.compile(model)
    kolo.broadcast_parameters(compiled.state_dict(), root_rank=0)
    optimizer = kolo.DistributedOptimizer(make_optimizer(compiled.parameters()),
                                          named_parameters=compiled.named_parameters())
    train(compiled, optimizer, batches, shard(rank))
    return compiled


def max_difference(model, other):
    return max((p - q).abs().max().item() for p, q in zip(model.parameters(), other.parameters()))


def check_trained_like_one_process(kolo, compiled, reference, batches, rank, size):
    """The checks both tests make once every rank has trained `compiled` (torch.compile of a model made
    by make_model) with kolo on its shard of `batches`; `reference` is train_plain(model, batches)."""
    # Every rank's weights: gathered before any assertion that could fail on some ranks only, so that a
    # failing rank does not leave the others waiting in the allgather.
    flat = torch.cat([p.detach().reshape(-1) for p in compiled.parameters()])
    gathered = kolo.allgather(flat.unsqueeze(0), name="torch_compile.parameters")

    counts = compile_counts()
    # torch.compile really compiled: dynamo captured the forward as a graph and AOTAutograd compiled it
    # (forward and backward) with inductor, in one piece, so the run cannot pass by falling back to eager.
    assert counts["graphs"] >= 1 and counts["aot_autograd_ok"] >= 1, "torch.compile compiled nothing: %s" % counts
    assert not counts["graph_breaks"], "the model's forward broke into several graphs: %s" % counts

    # Every rank's weights are the one-process reference's (to float32 rounding: see RTOL).
    for (name, p), q in zip(compiled.named_parameters(), reference.parameters()):
        torch.testing.assert_close(p.detach(), q.detach(), rtol=RTOL, atol=ATOL,
                                   msg=lambda m, name=name: "rank %d, %s against one process: %s" % (rank, name, m))

    # ... and the same bits on every rank (each applied the same averaged gradients to the same weights).
    assert gathered.shape == (size, flat.numel())
    for r in range(size):
        assert torch.equal(gathered[r], flat), "rank %d's weights differ from rank %d's by up to %g" % (
            r, rank, (gathered[r] - flat).abs().max().item())

    # The comparison can fail: training moved the weights far beyond the tolerance, and a rank that
    # trained on its shard alone (no averaged gradients) would end far from the reference.
    initial = make_model(flat.device)
    moved = max_difference(reference, initial)
    assert moved > 1000 * ATOL, "training hardly moved the weights (%g)" % moved
    if size > 1:
        alone = max_difference(train_plain(initial, batches, shard(rank)), reference)
        assert alone > 100 * ATOL, "a rank training on its shard alone ends within %g of the reference" % alone
