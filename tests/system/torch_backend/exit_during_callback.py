"""A program that leaves while a callback chained on a Work's future runs (kolo's completion thread runs it, inside
torch's future): it must end as usual, the callback run to its end, not abort at the interpreter's exit.

    python exit_during_callback.py
"""
import time

import torch
import torch.distributed as dist

import kolo.torch  # noqa: F401 (registers the backend)


def slow_callback(future):
    time.sleep(0.3)  # still running when the main thread leaves
    print("rank %d callback done: %s" % (dist.get_rank(), future.value()[0].tolist()), flush=True)


dist.init_process_group("kolo")
t = torch.ones(2)
dist.all_reduce(t, async_op=True).get_future().then(slow_callback)
print("rank %d leaving" % dist.get_rank(), flush=True)
