"""A loop's period broken once by a few other ops (an evaluation's metrics) within a check's window, on the kolo
backend: the time per op of a 9-op loop over the 4096 ops after that check, beside the same loop on a second group
that nothing breaks, their steps alternated in one job; and the ratio. Where the check kept the period in force the
ratio is about 1; where it went back to the 420 names (as before 2026-12-06's change), a 9-op loop's ops no longer
find their cached responses and are negotiated in full until the next check.

    torchrun --standalone --nproc_per_node 2 benchmarks/torch_backend_period_break.py
"""
import time

import torch
import torch.distributed as dist

from kolo.torch.backend._names import CHECK_EVERY, FIRST_CHECK, WINDOW

dist.init_process_group("gloo")
broken, steady = dist.new_group(backend="kolo"), dist.new_group(backend="kolo")
second = FIRST_CHECK + CHECK_EVERY  # the check whose window the two ops fall in
tensors = [torch.ones(i * 1000 + 1) for i in range(9)]
spent = {"broken": 0.0, "steady": 0.0}
ops, timed = 0, 0
while ops < second + CHECK_EVERY - 20:
    if ops == second - WINDOW // 2:
        for j in range(2):
            dist.all_reduce(torch.ones(50 + j), group=broken)
        ops += 2  # (the broken group's count; the steady group's is 2 behind)
    counted = ops > second + 9  # a step after the check's
    for name, group in (("broken", broken), ("steady", steady)):
        start = time.perf_counter()
        for t in tensors:
            dist.all_reduce(t, group=group)
        if counted:
            spent[name] += time.perf_counter() - start
    ops += 9
    timed += 9 if counted else 0
if dist.get_rank() == 0:
    b, s = spent["broken"] / timed * 1e6, spent["steady"] / timed * 1e6
    print("torch %s, %d ranks, a 9-op loop; us per op over the %d ops after the check: broken once %.1f, steady %.1f, "
          "ratio %.2f" % (torch.__version__, dist.get_world_size(), timed, b, s, b / s))
dist.destroy_process_group()
