"""Small-op latency from Python: one float32 scalar (and 16 of them) allreduced through kolo.torch's
blocking allreduce_, through allreduce (out of place, autograd's: Horovod's usual call for a metric;
an async op and its synchronize underneath), through allreduce_async_ + synchronize, and through
mpi4py's Allreduce on a numpy array (the peer). Each op is timed
between barriers (a step lasts until the slowest rank has it); the modes take turns in blocks of
--block ops, so that one mode's engine activity does not spill into the next's ops; medians and ratios.

    kolorun -np 2 python3 benchmarks/pytorch_small_op.py [--iterations 2000]
"""
import argparse
import statistics
import time

from mpi4py import MPI  # before kolo: MPI starts with MPI_THREAD_MULTIPLE

import numpy as np
import torch

import kolo.torch as kolo

parser = argparse.ArgumentParser()
parser.add_argument("--iterations", type=int, default=2000)
parser.add_argument("--warmup", type=int, default=200)
parser.add_argument("--block", type=int, default=100)
args = parser.parse_args()

kolo.init()
comm = MPI.COMM_WORLD


def timed(step):
    comm.Barrier()
    start = time.perf_counter()
    step()
    return comm.allreduce(time.perf_counter() - start, op=MPI.MAX)


rows = []
for n in (1, 16):
    t = torch.ones(n)
    a = np.ones(n, np.float32)
    # The names made once, as a training loop's constant name: formatting one per op timed the benchmark.
    name, async_name, out_name = "small.%d" % n, "small.async.%d" % n, "small.out.%d" % n
    modes = [("kolo.torch allreduce_", lambda: kolo.allreduce_(t, op=kolo.Sum, name=name)),
             ("kolo.torch allreduce (out of place)", lambda: kolo.allreduce(t, op=kolo.Sum, name=out_name)),
             ("kolo.torch allreduce_async_ + synchronize",
              lambda: kolo.synchronize(kolo.allreduce_async_(t, op=kolo.Sum, name=async_name))),
             ("mpi4py Allreduce", lambda: comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM))]
    samples = {name: [] for name, _ in modes}
    for first in range(0, args.warmup + args.iterations, args.block):
        for name, step in modes:
            for i in range(first, min(first + args.block, args.warmup + args.iterations)):
                dt = timed(step)
                if i >= args.warmup:
                    samples[name].append(dt)
                t.fill_(1.0)
                a.fill(1.0)
    peer = statistics.median(samples["mpi4py Allreduce"])
    for name, _ in modes:
        rows.append(("%s, %d B" % (name, 4 * n), statistics.median(samples[name]), peer))

if comm.rank == 0:
    print("# float32 sum allreduce from Python, %d ranks; median of %d, in turns; ratio = time / mpi4py's"
          % (comm.size, args.iterations))
    print("%-52s %10s %8s" % ("", "time (us)", "ratio"))
    for name, seconds, peer in rows:
        print("%-52s %10.2f %8.2f" % (name, seconds * 1e6, seconds / peer))
