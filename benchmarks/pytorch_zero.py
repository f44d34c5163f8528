"""kolo's sharded optimizer (DistributedOptimizer(zero_stage=1|2)) against the unsharded one (zero_stage=0,
Horovod's) and against torch's ZeroRedundancyOptimizer (over DDP on gloo, its usual company), with Adam.

Speed (the default): every variant on its own copy of one model in the same processes, their steps
alternated in rounds; each variant's median step time (the slowest rank's) and its ratio to the unsharded
optimizer's and to ZeroRedundancyOptimizer's. Memory (--memory VARIANT): one variant alone in fresh
processes, a few steps; the peak resident memory of the process (the largest rank's), and what the
variant holds per rank as optimizer state and as gradients after backward, against the whole model's.

    kolorun -np 2 python3 benchmarks/pytorch_zero.py [--model resnet50|tutorial] [--steps 5] [--rounds 3]
    for v in kolo0 kolo1 kolo2 torch_zero; do kolorun -np 2 python3 benchmarks/pytorch_zero.py --memory $v; done
"""
import argparse
import json
import os
import resource
import statistics
import time

from mpi4py import MPI  # before kolo, as the other Python benchmarks (gradient_set_bench.py)

import torch
import torch.distributed as dist
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel

import kolo.torch as kolo
from gradient_shapes import read_shapes

VARIANTS = ["kolo0", "kolo1", "kolo2", "torch_zero"]
LABELS = {"kolo0": "kolo DistributedOptimizer (unsharded, Horovod's)", "kolo1": "kolo zero_stage=1",
          "kolo2": "kolo zero_stage=2", "torch_zero": "torch DDP (gloo) + ZeroRedundancyOptimizer"}


class Tutorial(torch.nn.Module):
    """torch's ZeroRedundancyOptimizer tutorial's model: 20 x Linear(2000, 2000)."""

    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(*[torch.nn.Linear(2000, 2000) for _ in range(20)])

    def forward(self, x):
        return self.layers(x).sum()


class GradientSet(torch.nn.Module):
    """ResNet-50's parameter shapes (161 tensors, 25.6 M elements); the loss sum(p * w) gives each
    parameter the gradient w, so that a step costs backward's memory traffic and no convolutions."""

    def __init__(self):
        super().__init__()
        shapes = read_shapes()
        self.params = torch.nn.ParameterList([torch.nn.Parameter(torch.zeros(s)) for _, s in shapes])
        self.weights = [torch.full(s, 1e-3) for _, s in shapes]

    def forward(self, x):
        return sum((p * w).sum() for p, w in zip(self.params, self.weights)) * x.sum()


def make(variant, model_name):
    torch.manual_seed(0)
    model = Tutorial() if model_name == "tutorial" else GradientSet()
    if variant == "torch_zero":
        ddp = DistributedDataParallel(model)
        return ddp, model, ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.Adam, lr=1e-4)
    stage = int(variant[-1])
    optimizer = kolo.DistributedOptimizer(torch.optim.Adam(model.parameters(), lr=1e-4), zero_stage=stage,
                                          named_parameters=model.named_parameters())
    return model, model, optimizer


def step(runner, optimizer, x):
    optimizer.zero_grad()
    runner(x).backward()
    optimizer.step()


def held(variant, model, optimizer):
    """(optimizer state bytes, gradient bytes) this rank holds after backward."""
    def tensor_bytes(state):
        return sum(v.numel() * v.element_size() for s in state.values() for v in s.values()
                   if torch.is_tensor(v) and v.dim() > 0)
    if variant == "torch_zero":
        state = tensor_bytes(optimizer.optim.state)
    elif variant == "kolo0":
        state = tensor_bytes(optimizer.state)
    else:
        state = tensor_bytes(optimizer._inner.state) if optimizer._inner is not None else 0
    grads = sum(p.grad.numel() * p.grad.element_size() for p in model.parameters() if p.grad is not None)
    if variant == "kolo2":
        grads += sum(g.numel() * g.element_size() for g in optimizer._grad_shards.values())
        grads += sum(p.numel() * p.element_size() for p in optimizer._packs.values())
    return state, grads


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=["resnet50", "tutorial"], default="resnet50")
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--memory", choices=VARIANTS)
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    kolo.init()
    comm = MPI.COMM_WORLD
    rank, size = comm.rank, comm.size
    torch.set_num_threads(1)
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("gloo", rank=rank, world_size=size)
    x = torch.randn(8, 2000) if args.model == "tutorial" else torch.ones(1)
    if args.memory:
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        runner, model, optimizer = make(args.memory, args.model)
        for _ in range(3):
            step(runner, optimizer, x)
        optimizer.zero_grad()
        runner(x).backward()
        if args.memory == "kolo2":
            optimizer.synchronize()  # its shard of the gradients, as step() would take it
        state, grads = held(args.memory, model, optimizer)
        peak = comm.allreduce(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, op=MPI.MAX)
        base = comm.allreduce(before, op=MPI.MAX)
        whole = sum(p.numel() * p.element_size() for p in model.parameters())
        states = comm.gather(state, root=0)
        grads_all = comm.gather(grads, root=0)
        if rank == 0:
            mb = 1e6
            print("# %s, %s model (%.1f MB of parameters), Adam, %d ranks" % (LABELS[args.memory], args.model,
                                                                             whole / mb, size))
            print("peak resident memory of a rank: %.0f MB (%.0f MB before the model)" % (peak / 1e3, base / 1e3))
            print("optimizer state per rank: %s MB = %s of the whole (Adam's: 2 x the parameters)" % (
                " ".join("%.1f" % (s / mb) for s in states),
                " ".join("%.4f" % (s / (2 * whole)) for s in states)))
            print("gradients held per rank after backward (stage 2: its shards and its packing buffer): "
                  "%s MB = %s of the parameters" % (
                " ".join("%.1f" % (g / mb) for g in grads_all), " ".join("%.4f" % (g / whole) for g in grads_all)))
        return
    built = {v: make(v, args.model) for v in VARIANTS}
    times = {v: [] for v in VARIANTS}
    for _ in range(args.rounds):
        for v in VARIANTS:
            runner, _, optimizer = built[v]
            step(runner, optimizer, x)  # warm-up
            for _ in range(args.steps):
                comm.Barrier()
                start = time.perf_counter()
                step(runner, optimizer, x)
                times[v].append(comm.allreduce(time.perf_counter() - start, op=MPI.MAX))
    medians = {v: statistics.median(t) for v, t in times.items()}
    # The same training everywhere: every variant's parameters agree with the unsharded one's.
    reference = list(built["kolo0"][1].parameters())
    for v in VARIANTS[1:]:
        worst = max((p - q).abs().max().item() for p, q in zip(built[v][1].parameters(), reference))
        assert worst < 1e-4, (v, worst)
    if rank == 0:
        print("# %s model, Adam, %d ranks; median of %d steps x %d rounds, alternated" % (
            args.model, size, args.steps, args.rounds))
        print("%-48s %10s %12s %14s" % ("", "step (ms)", "vs unsharded", "vs torch ZeRO"))
        for v in VARIANTS:
            print("%-48s %10.1f %12.3f %14.3f" % (LABELS[v], medians[v] * 1e3, medians[v] / medians["kolo0"],
                                                  medians[v] / medians["torch_zero"]))
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"model": args.model, "ranks": size, "median_seconds": medians}, f, indent=1)


if __name__ == "__main__":
    main()
