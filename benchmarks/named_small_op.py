"""A small op named and unnamed: kolo.torch's blocking allreduce_ of one float32, with a name (found in kolo's
response cache after its first call) and without (a new name each call, negotiated in full), alternated in
blocks of back-to-back ops; the median over blocks of the time per op, and the ratio.

    kolorun -np 2 python3 benchmarks/named_small_op.py             # the MPI world
    kolorun --gloo -np 2 python3 benchmarks/named_small_op.py      # the Gloo world
"""
import statistics
import time

import torch

import kolo.torch as kolo

BLOCKS, OPS = 20, 200

kolo.init()
t = torch.ones(1)
calls = {"named": lambda: kolo.allreduce_(t, op=kolo.Sum, name="bench.small"),
         "unnamed": lambda: kolo.allreduce_(t, op=kolo.Sum)}
for call in calls.values():
    for _ in range(50):
        call()
times = {name: [] for name in calls}
for _ in range(BLOCKS):
    for name, call in calls.items():
        kolo.barrier()
        start = time.perf_counter()
        for _ in range(OPS):
            call()
        times[name].append((time.perf_counter() - start) / OPS)
if kolo.rank() == 0:
    named, unnamed = (statistics.median(times[k]) * 1e6 for k in ("named", "unnamed"))
    print("%s world, %d ranks: one float32 allreduce_, median us per op: named %.1f, unnamed %.1f, ratio %.1f"
          % ("Gloo" if kolo.gloo_enabled() else "MPI", kolo.size(), named, unnamed, unnamed / named))
