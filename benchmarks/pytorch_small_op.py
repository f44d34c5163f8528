"""Small-op latency from Python: one float32 scalar (and 16 of them) allreduced through kolo.torch's
blocking allreduce_, through allreduce (out of place: Horovod's usual call for a metric), through
allreduce_async_ + synchronize, and through mpi4py's calls of the same kinds on a numpy array (the peers:
Allreduce in place, Allreduce into an array made for the call, Iallreduce + Wait). Each op is timed
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


# Each kolo call beside mpi4py's call of the same kind (the peer its `like` ratio is taken to): in place;
# out of place, into an array allocated for the call as kolo's allreduce allocates its output; nonblocking,
# then waited for. The `ratio` column is against mpi4py's in-place Allreduce, the cheapest call.
PEER = "mpi4py Allreduce (in place)"
rows = []
for n in (1, 16):
    t = torch.ones(n)
    a = np.ones(n, np.float32)
    # The names made once, as a training loop's constant name: formatting one per op timed the benchmark.
    name, async_name, out_name = "small.%d" % n, "small.async.%d" % n, "small.out.%d" % n
    modes = [("kolo.torch allreduce_", PEER, lambda: kolo.allreduce_(t, op=kolo.Sum, name=name)),
             ("kolo.torch allreduce (out of place)", "mpi4py Allreduce (out of place)",
              lambda: kolo.allreduce(t, op=kolo.Sum, name=out_name)),
             ("kolo.torch allreduce_async_ + synchronize", "mpi4py Iallreduce + Wait",
              lambda: kolo.synchronize(kolo.allreduce_async_(t, op=kolo.Sum, name=async_name))),
             (PEER, PEER, lambda: comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM)),
             ("mpi4py Allreduce (out of place)", "mpi4py Allreduce (out of place)",
              lambda: comm.Allreduce(a, np.empty_like(a), op=MPI.SUM)),
             ("mpi4py Iallreduce + Wait", "mpi4py Iallreduce + Wait",
              lambda: comm.Iallreduce(MPI.IN_PLACE, a, op=MPI.SUM).Wait())]
    samples = {name: [] for name, _, _ in modes}
    for first in range(0, args.warmup + args.iterations, args.block):
        for name, _, step in modes:
            for i in range(first, min(first + args.block, args.warmup + args.iterations)):
                dt = timed(step)
                if i >= args.warmup:
                    samples[name].append(dt)
                t.fill_(1.0)
                a.fill(1.0)
    medians = {name: statistics.median(v) for name, v in samples.items()}
    for name, like, _ in modes:
        rows.append(("%s, %d B" % (name, 4 * n), medians[name], medians[PEER], medians[like]))

if comm.rank == 0:
    print("# float32 sum allreduce from Python, %d ranks; median of %d, in turns; ratio = time / mpi4py's in-place"
          " Allreduce's; like = time / mpi4py's call of the same kind's" % (comm.size, args.iterations))
    print("%-52s %10s %8s %8s" % ("", "time (us)", "ratio", "like"))
    for name, seconds, peer, like in rows:
        print("%-52s %10.2f %8.2f %8.2f" % (name, seconds * 1e6, seconds / peer, seconds / like))
