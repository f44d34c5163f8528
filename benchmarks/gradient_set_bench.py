"""What the Python gradient-set benchmarks share: their options, the mpi4py peers on
host buffers of the same bytes, and the timing of modes in interleaved rounds."""
import argparse
import statistics
import time

from mpi4py import MPI  # imported before kolo: MPI starts with MPI_THREAD_MULTIPLE; kolo uses its own duplicates

import numpy as np

from gradient_shapes import SHAPES


def parse_args(steps=10, rounds=3):
    """The options every gradient-set benchmark takes: --shapes, --steps, --rounds, --json."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", default=SHAPES)
    parser.add_argument("--steps", type=int, default=steps)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--json", default="")
    return parser.parse_args()


def mpi4py_modes(comm, shapes):
    """The same bytes through mpi4py's Allreduce on host buffers: all in one call, and per tensor."""
    flat = np.zeros(sum(int(np.prod(s)) for _, s in shapes), np.float32)
    buffers = [np.zeros(s, np.float32) for _, s in shapes]

    def whole():
        comm.Allreduce(MPI.IN_PLACE, flat, op=MPI.SUM)

    def per_tensor():
        for b in buffers:
            comm.Allreduce(MPI.IN_PLACE, b, op=MPI.SUM)

    return [("mpi4py Allreduce, all bytes in one call", whole), ("mpi4py Allreduce per tensor", per_tensor)]


def c_abi_step_of(shapes):
    """The issue's yardstick inside the benchmark's own process: kolo's C ABI on host arrays of the
    same shapes, 161 allreduces enqueued at once, in place, then waited for (what the C++ benchmark's
    kolo row does). Returns the step as a function; kolo must be initialized."""
    from kolo import _host
    from kolo._abi import SUM, _C

    arrays = [np.full(shape, 2.0, np.float32) for _, shape in shapes]
    names = ["host.%s" % name for name, _ in shapes]

    def step():
        # In place, as the C++ benchmark reuses its buffers; the values grow each step, harmlessly.
        _host._wait_all([_C.allreduce(n, _host._describe(a, n), None, SUM, 1.0, 1.0, 0, 0, False)
                         for a, n in zip(arrays, names)])

    return step


def median_times(comm, modes, rounds, steps):
    """Each mode's median step time (the slowest rank's), over `rounds` rounds that take the modes in
    turn, so that drift on a shared machine hits every mode alike."""
    times = {name: [] for name, _ in modes}
    for _ in range(rounds):
        for name, fn in modes:
            fn()  # warm-up
            for _ in range(steps):
                comm.Barrier()
                start = time.perf_counter()
                fn()
                times[name].append(comm.allreduce(time.perf_counter() - start, op=MPI.MAX))
    return {name: statistics.median(t) for name, t in times.items()}
