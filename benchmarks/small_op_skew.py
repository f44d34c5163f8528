"""A small allreduce when the ranks do not arrive together: the last rank calls it --skew late (a busy
wait after a barrier), as a rank still computing or loading data does. Two times per op, from the clock
all processes of a machine share (CLOCK_MONOTONIC: one host, or hosts emulated on one machine):
- late: the last rank's call to its return; what it pays for being last.
- others: the last rank's call to the return of the slowest of the others; how long they wait past the
  moment the op could end.
kolo.torch's blocking allreduce_ of one float32 against mpi4py's Allreduce (which spins in MPI while it
waits), in turns, in blocks of --block ops; medians, and each time's ratio to mpi4py's.

    kolorun -np 2 python3 benchmarks/small_op_skew.py [--iterations 300] [--skews-us 0,50,200,1000,3000]

Across 2 emulated hosts (tests/system/cluster/cluster.sh), with --late-sleeps and MPI yielding while it
waits (`--mca mpi_yield_when_idle 1`): on a 2-core machine a spinning process holds the core that the
emulated network needs, and every message then takes milliseconds.
"""
import argparse
import statistics
import time

from mpi4py import MPI  # before kolo: MPI starts with MPI_THREAD_MULTIPLE

import numpy as np
import torch

import kolo.torch as kolo

parser = argparse.ArgumentParser()
parser.add_argument("--iterations", type=int, default=300)
parser.add_argument("--warmup", type=int, default=30)
parser.add_argument("--block", type=int, default=30)
parser.add_argument("--skews-us", default="0,50,200,1000,3000")
# Emulated hosts on one small machine share its cores: a late rank spinning there takes the core that
# the network needs to deliver the others' messages, which a real host's rank does not.
parser.add_argument("--late-sleeps", action="store_true", help="the late rank sleeps through its skew instead of spinning")
args = parser.parse_args()

kolo.init()
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
last = size - 1
t = torch.ones(1)
a = np.ones(1, np.float32)
modes = [("kolo.torch allreduce_", lambda: kolo.allreduce_(t, op=kolo.Sum, name="skewed")),
         ("mpi4py Allreduce", lambda: comm.Allreduce(MPI.IN_PLACE, a, op=MPI.SUM))]


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


def one_op(step, skew):
    comm.Barrier()
    if rank == last:
        if args.late_sleeps:
            time.sleep(skew)
        else:
            spin(skew)
    start = time.perf_counter()
    step()
    end = time.perf_counter()
    t.fill_(1.0)
    a.fill(1.0)
    # Gathered after the op: the last rank's start, and every rank's end.
    starts_ends = comm.allgather((start, end))
    late_start, late_end = starts_ends[last]
    others = max(e for r, (_, e) in enumerate(starts_ends) if r != last) - late_start
    return late_end - late_start, others


rows = []
for skew_us in [float(s) for s in args.skews_us.split(",")]:
    samples = {name: ([], []) for name, _ in modes}
    total = args.warmup + args.iterations
    for first in range(0, total, args.block):
        for name, step in modes:
            for i in range(first, min(first + args.block, total)):
                late, others = one_op(step, skew_us * 1e-6)
                if i >= args.warmup:
                    samples[name][0].append(late)
                    samples[name][1].append(others)
    peer = [statistics.median(v) for v in samples["mpi4py Allreduce"]]
    for name, _ in modes:
        late, others = (statistics.median(v) for v in samples[name])
        rows.append((skew_us, name, late, late / peer[0], others, others / peer[1]))

if rank == 0:
    print("# float32 sum allreduce of one element, %d ranks, the last one late by the skew; median of %d, in turns;"
          " ratio = time / mpi4py's" % (size, args.iterations))
    print("%-10s %-24s %10s %8s %12s %8s" % ("skew (us)", "", "late (us)", "ratio", "others (us)", "ratio"))
    for skew_us, name, late, late_ratio, others, others_ratio in rows:
        print("%-10g %-24s %10.2f %8.2f %12.2f %8.2f" % (skew_us, name, late * 1e6, late_ratio, others * 1e6,
                                                          others_ratio))
