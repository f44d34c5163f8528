"""ResNet-50's gradient set (161 float32 tensors, 25,557,032 elements) reduced by kolo.tensorflow's ops
inside a tf.function step (one KoloAllreduce op per tensor; kolo fuses them), against the same bytes
through mpi4py's Allreduce on host buffers (one call of all bytes, and one call per tensor), in the
same run. The step makes the gradients (x * 2, standing in for backward), so that they are
temporaries of the graph as in training; the same step without kolo is the baseline. The issue's
yardstick, kolo's own C ABI on the same bytes without TensorFlow (161 allreduces enqueued at once on
host arrays, in place, then waited for: what the C++ benchmark's kolo row does), runs in the same rounds,
so the ratio of the two does not depend on how busy the machine is.

    kolorun -np 2 .venv/bin/python benchmarks/tf_gradient_set.py [--steps 10] [--rounds 3] [--json out.json]
"""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from gradient_set_bench import MPI, median_times, mpi4py_modes, parse_args  # noqa: E402  before kolo: see there
from gradient_shapes import read_shapes  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import kolo.tensorflow as kolo  # noqa: E402
from kolo import _core, _host  # noqa: E402

args = parse_args()

kolo.init()
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size

shapes = read_shapes(args.shapes)
params = [tf.Variable(tf.ones(shape, tf.float32)) for _, shape in shapes]
total = sum(int(np.prod(s)) for _, s in shapes)


@tf.function
def step_alone():
    return [p * 2.0 for p in params]


@tf.function
def step_with_kolo():
    return [kolo.allreduce(p * 2.0, op=kolo.Sum, name="grad.%s" % name) for p, (name, _) in zip(params, shapes)]


# Correct before timed: every tensor sums to twice the rank count.
check = step_with_kolo()
assert all(float(tf.reshape(v, [-1])[0]) == 2 * size and float(tf.reshape(v, [-1])[-1]) == 2 * size for v in check)
del check


def local_step():
    [t.numpy() for t in step_alone()[:1]]  # the step's outputs exist once one is fetched


def kolo_step():
    [t.numpy() for t in step_with_kolo()[:1]]


host_arrays = [np.full(shape, 2.0, np.float32) for _, shape in shapes]
host_names = ["host.%s" % name for name, _ in shapes]


def c_abi_step():
    # In place, as the C++ benchmark reuses its buffers; the values grow each step, harmlessly.
    _host._wait_all([_core._C.allreduce_async(n, _host._describe(a, n), _host._describe(a, n), _core.SUM, 1.0, 1.0,
                                              process_set=0) for a, n in zip(host_arrays, host_names)])


C_ABI = "kolo's C ABI on host arrays, no TensorFlow"
modes = [("tf.function step, no communication", local_step),
         ("tf.function step + kolo.tensorflow allreduces", kolo_step),
         (C_ABI, c_abi_step)]
modes += mpi4py_modes(comm, shapes)
med = median_times(comm, modes, args.rounds, args.steps)
if rank == 0:
    one_call = med["mpi4py Allreduce, all bytes in one call"]
    per_tensor = med["mpi4py Allreduce per tensor"]
    print("# ResNet-50 gradient set through a tf.function step: %d tensors, %d float32 elements (%.1f MB), sum, "
          "%d ranks" % (len(shapes), total, total * 4 / 1e6, size))
    print("# median of %d steps x %d rounds, tensorflow %s" % (args.steps, args.rounds, tf.__version__))
    print("%-48s %10s %12s %14s" % ("", "time (ms)", "vs one call", "vs per tensor"))
    for name, _ in modes:
        print("%-48s %10.2f %12.3f %14.3f" % (name, med[name] * 1e3, med[name] / one_call, med[name] / per_tensor))
    comm_time = med["tf.function step + kolo.tensorflow allreduces"] - med["tf.function step, no communication"]
    print("# kolo.tensorflow's communication beyond the step: %.2f ms, %.3f x one mpi4py call of all bytes, "
          "%.3f x mpi4py per tensor" % (comm_time * 1e3, comm_time / one_call, comm_time / per_tensor))
    print("# kolo.tensorflow's communication / kolo's C ABI without TensorFlow, same rounds: %.3f"
          % (comm_time / med[C_ABI]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "tf_gradient_set", "ranks": size, "tensors": len(shapes), "elements": total,
                       "median_seconds": med, "kolo_communication_seconds": comm_time,
                       "vs_c_abi": comm_time / med[C_ABI]}, f, indent=2)
kolo.shutdown()
