"""Where the kolo backend's time goes on a small op, one rank (no peer to wait for): torch's dispatch to a Python
ProcessGroup (the same group, its allreduce swapped for one that returns at once, with no Work, as the backend's
blocking calls do), the backend's
all_reduce, and kolo.torch's own named allreduce_, alternated in blocks; the median per op and the differences.

    torchrun --standalone --nproc_per_node 1 benchmarks/torch_backend_dispatch.py
"""
import statistics
import time

import torch
import torch.distributed as dist

import kolo.torch as kolo
from kolo.torch.backend._process_group import KoloProcessGroup

dist.init_process_group("kolo")
tensor = torch.ones(1)
backend_allreduce = KoloProcessGroup.allreduce


def floor_block(n):
    KoloProcessGroup.allreduce = lambda self, tensors, opts=None: None
    try:
        for _ in range(n):
            dist.all_reduce(tensor)
    finally:
        KoloProcessGroup.allreduce = backend_allreduce


BLOCKS = {
    "torch's dispatch": floor_block,
    "kolo backend": lambda n: [dist.all_reduce(tensor) for _ in range(n)],
    "kolo.torch allreduce_": lambda n: [kolo.allreduce_(tensor, op=kolo.Sum, name="own") for _ in range(n)],
}
times = {name: [] for name in BLOCKS}
for block in BLOCKS.values():
    block(1000)  # warm-up, the backend's names cached
for _ in range(20):
    for name, block in BLOCKS.items():
        start = time.perf_counter()
        block(2000)
        times[name].append((time.perf_counter() - start) / 2000)
m = {name: statistics.median(t) * 1e6 for name, t in times.items()}
print("torch %s, 1 rank, float32[1], median us per blocking op over 20 blocks of 2000" % torch.__version__)
for name, us in m.items():
    print("%-24s %7.2f us" % (name, us))
print("backend - own: %.2f us, of which torch's dispatch %.2f us and the backend's Python %.2f us"
      % (m["kolo backend"] - m["kolo.torch allreduce_"], m["torch's dispatch"],
         m["kolo backend"] - m["kolo.torch allreduce_"] - m["torch's dispatch"]))
dist.destroy_process_group()
