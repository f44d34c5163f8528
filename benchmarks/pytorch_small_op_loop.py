"""A small async op in a loop, one every --period: what it costs the loop's thread and what kolo's threads
spend meanwhile. Each step submits allreduce_async_ of a float32 scalar, computes for --compute (a metric
waited for at once: 0), synchronizes it, then sleeps until the next period. Reported per rank 0: the
median time from the submit's start to synchronize's end, less the compute; and the CPU time of every
thread but the loop's (kolo's, MPI's), from the kernel's own count (/proc/self/task/*/schedstat), as a
share of one core. Run two builds in turns (PYTHONPATH) to compare them.

At 1 rank the op time is what the loop's thread pays. At several ranks it is mostly how far apart the
ranks' sleeps end (on a 2-core VM, tens to hundreds of microseconds, differing from run to run).

    python3 benchmarks/pytorch_small_op_loop.py [--periods 0.5,2,10] [--seconds 5]
"""
import argparse
import os
import statistics
import threading
import time

from mpi4py import MPI  # before kolo: MPI starts with MPI_THREAD_MULTIPLE

import torch

import kolo.torch as kolo

parser = argparse.ArgumentParser()
parser.add_argument("--periods", default="0.5,2,10", help="milliseconds between the ops, comma separated")
parser.add_argument("--seconds", type=float, default=5.0, help="how long each period runs")
parser.add_argument("--compute", type=float, default=0.0, help="milliseconds between submit and synchronize")
args = parser.parse_args()

kolo.init()
comm = MPI.COMM_WORLD
loop_thread = threading.get_native_id()


def other_threads_cpu_seconds():
    total = 0
    for tid in os.listdir("/proc/self/task"):
        if int(tid) == loop_thread:
            continue
        try:
            with open("/proc/self/task/%s/schedstat" % tid) as f:
                total += int(f.read().split()[0])
        except FileNotFoundError:  # a thread that ended meanwhile
            pass
    return total / 1e9


def spin(seconds):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


t = torch.ones(1)
rows = []
for period_ms in (float(p) for p in args.periods.split(",")):
    period, compute = period_ms / 1e3, args.compute / 1e3
    comm.Barrier()
    cpu0, wall0 = other_threads_cpu_seconds(), time.perf_counter()
    next_step = wall0
    times = []
    while time.perf_counter() - wall0 < args.seconds:
        start = time.perf_counter()
        handle = kolo.allreduce_async_(t, op=kolo.Sum, name="loop.metric")
        if compute:
            spin(compute)
        kolo.synchronize(handle)
        times.append(time.perf_counter() - start - compute)
        t.fill_(1.0)
        next_step += period
        pause = next_step - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
    cpu = (other_threads_cpu_seconds() - cpu0) / (time.perf_counter() - wall0)
    rows.append((period_ms, len(times), statistics.median(times), cpu))
    comm.Barrier()

if comm.rank == 0:
    print("# allreduce_async_ + synchronize of a float32 scalar in a loop, %d ranks, %.0f s per period, compute %g ms;"
          " rank 0" % (comm.size, args.seconds, args.compute))
    print("%-12s %8s %16s %28s" % ("period (ms)", "ops", "op time (us)", "other threads' CPU (% core)"))
    for period_ms, n, seconds, cpu in rows:
        print("%-12g %8d %16.2f %28.2f" % (period_ms, n, seconds * 1e6, cpu * 100))
