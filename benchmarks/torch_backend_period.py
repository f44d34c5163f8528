"""A loop whose period does not divide the backend's 420 names (9 all_reduces a step, as a DDP model of 9 buckets
issues), on two kolo groups of every rank in one job: one that names the ops by the period it found (the backend
as shipped), one held to the 420 names (its checks pushed past the run), so each of its ops is negotiated in full.
The two take turns in blocks of steps, each block timed between barriers; the median over blocks of the time per
op, and the ratio. Sizes: 9 float32 tensors of 1 to 9 KiB (--elements scales them). --period 97: a longer loop
(FSDP's gathers and reductions over 32 blocks, say), found at the group's second check.

    torchrun --standalone --nproc_per_node 2 benchmarks/torch_backend_period.py [--period 97]   (the Gloo world)
    kolorun -np 2 python benchmarks/torch_backend_period.py                                    (the MPI world)
"""
import argparse
import statistics
import time

import torch
import torch.distributed as dist

import kolo.torch as kolo
from kolo.torch.backend._names import CHECK_EVERY, FIRST_CHECK, FIRST_WINDOW, SLOTS

parser = argparse.ArgumentParser()
parser.add_argument("--elements", type=int, default=256, help="float32s of the first tensor; the i-th has i times")
parser.add_argument("--blocks", type=int, default=20)
parser.add_argument("--steps-per-block", type=int, default=20)
parser.add_argument("--period", type=int, default=9, help="all_reduces a step")
args = parser.parse_args()

dist.init_process_group("kolo")
rank, size = dist.get_rank(), dist.get_world_size()
PERIOD = args.period
# The check that finds it: the first looks for periods of up to a third of its window.
FOUND_AT = FIRST_CHECK if PERIOD <= FIRST_WINDOW // 3 else FIRST_CHECK + CHECK_EVERY


by_period = dist.new_group(backend="kolo")  # torch hands back kolo's group itself (2.4 to 2.15)
by_slots = dist.new_group(backend="kolo")
by_slots.names._check_at = 1 << 62  # never checks: the 420 names throughout
tensors = [torch.ones(args.elements * (i + 1)) for i in range(PERIOD)]


def step(group):
    works = [dist.all_reduce(t, group=group, async_op=True) for t in tensors]
    for w in works:
        w.wait()


def timed(group, steps):
    kolo.barrier()
    start = time.perf_counter()
    for _ in range(steps):
        step(group)
    spent = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
    kolo.allreduce_(spent, op=kolo.Max, name="timing")
    return spent.item() / (steps * PERIOD)


# Warm-up: past the check that finds the period, then a full round of names, on each group.
for group in (by_period, by_slots):
    for _ in range((FOUND_AT + SLOTS) // PERIOD + 1):
        step(group)
assert by_period.names._slots == PERIOD * (SLOTS // PERIOD), by_period.names._slots
times = {"by period": [], "420 names": []}
paths = [("by period", by_period), ("420 names", by_slots)]
for block in range(args.blocks):
    for name, group in paths[block % 2:] + paths[:block % 2]:
        times[name].append(timed(group, args.steps_per_block))
if rank == 0:
    p, s = statistics.median(times["by period"]), statistics.median(times["420 names"])
    print("torch %s, %s world, %d ranks, %d all_reduces a step of %d to %d float32: median us per op" % (
        torch.__version__, "Gloo" if kolo.gloo_enabled() else "MPI", size, PERIOD, args.elements,
        args.elements * PERIOD))
    print("%14s %14s %10s" % ("by period", "420 names", "ratio"))
    print("%14.1f %14.1f %10.3f" % (p * 1e6, s * 1e6, p / s))
dist.destroy_process_group()
