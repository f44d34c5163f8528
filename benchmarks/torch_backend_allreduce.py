"""torch.distributed's all_reduce on the kolo backend, beside Gloo's and kolo.torch's own allreduce_, in one job:
4 B to 64 MiB of float32, blocking. The default group is Gloo's and the kolo group every rank's
(dist.new_group(backend="kolo")); the three calls take turns in blocks of back-to-back ops, each block timed
between barriers (until the slowest rank is done; the barrier is kolo's, outside the timing); the median over
blocks of the time per op, and ratios.

    torchrun --standalone --nproc_per_node 2 benchmarks/torch_backend_allreduce.py [--scale 1.0]
    kolorun --gloo -np 4 python benchmarks/torch_backend_allreduce.py
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist

import kolo.torch as kolo
from kolo.torch.backend._names import SLOTS

SIZES = [4, 64 << 10, 1 << 20, 16 << 20, 64 << 20]

parser = argparse.ArgumentParser()
parser.add_argument("--scale", type=float, default=1.0, help="multiplies every size's op count")
args = parser.parse_args()

dist.init_process_group("gloo")
kolo_group = dist.new_group(backend="kolo")
rank, size = dist.get_rank(), dist.get_world_size()


def ops_for(nbytes):
    # 1 GiB of each path's ops per size, at most 2000: at 1 MiB a thousand ops, whose time the machine's spread
    # swamps in fewer (kolo's op takes 50-100 us there).
    return max(6, int(args.scale * min(2000, (1 << 30) // max(nbytes, 1 << 12))))


def timed(step):
    kolo.barrier()
    start = time.perf_counter()
    step()
    spent = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
    kolo.allreduce_(spent, op=kolo.Max, name="timing")
    return spent.item()


CALLS = {
    "gloo": lambda t: dist.all_reduce(t),
    "kolo backend": lambda t: dist.all_reduce(t, group=kolo_group),
    # Named, as a script names a loss's or a metric's: an unnamed op is negotiated in full each time.
    "kolo.torch allreduce_": lambda t: kolo.allreduce_(t, op=kolo.Sum, name="bench.own"),
}

rows = []
for nbytes in SIZES:
    tensor = torch.ones(nbytes // 4)
    n = ops_for(nbytes)
    block = max(1, n // 20)
    times = {name: [] for name in CALLS}
    # Warm-up: each path's first ops (connections, buffers), as many as the backend has names for its ops, so
    # that each name is cached with this size: the steady state of a loop whose ops recur each step.
    for call in CALLS.values():
        for _ in range(SLOTS):
            call(tensor)
    paths = list(CALLS.items())
    for round_, start in enumerate(range(0, n, block)):
        count = min(block, n - start)
        # The block after Gloo's finds the caches Gloo's buffers left (at 1 MiB, 6-op blocks, a fifth of an op's
        # time), which a kolo job never meets: Gloo's block first, then one untimed op, then kolo's two in turn.
        # (Each path first in turn, as before, put the backend after Gloo's block in two rounds of three, and
        # kolo.torch's call in one.)
        gloo, ours = paths[0], paths[1:]
        order = [gloo] + (ours if round_ % 2 == 0 else ours[::-1])
        order[1][1](tensor)
        for name, call in order:
            # A block back to back, as a training step issues them: one op timed alone between barriers would
            # measure the ranks' skew leaving the barrier (hundreds of us here), not the op.
            times[name].append(timed(lambda: [call(tensor) for _ in range(count)]) / count)
    rows.append((nbytes, {name: statistics.median(t) for name, t in times.items()}))

if rank == 0:
    print("torch %s, %d ranks; median seconds per blocking all_reduce of float32, and ratios" % (torch.__version__, size))
    print("%10s %12s %12s %12s %16s %14s" % ("bytes", "gloo", "kolo backend", "kolo.torch", "backend/own", "backend/gloo"))
    for nbytes, m in rows:
        own, backend, gloo = m["kolo.torch allreduce_"], m["kolo backend"], m["gloo"]
        print("%10d %12.3g %12.3g %12.3g %16.2f %14.3f" % (nbytes, gloo, backend, own, backend / own, backend / gloo))
dist.destroy_process_group()
