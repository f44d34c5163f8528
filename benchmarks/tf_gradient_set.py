"""ResNet-50's gradient set (161 float32 tensors, 25,557,032 elements) reduced by kolo.tensorflow's ops
inside a tf.function step, against the same bytes through mpi4py's Allreduce on host buffers (one call
of all bytes, and one call per tensor), in the same run. The step makes the gradients (x * 2, standing
in for backward), so that they are temporaries of the graph as in training; the same step without
kolo is the baseline. Two ways through kolo.tensorflow: one KoloAllreduce op per tensor (what
DistributedGradientTape does by default; kolo fuses them), and one grouped_allreduce op for all of
them (DistributedGradientTape(groups=1)).

The issue's yardstick is kolo's own C ABI on the same bytes without TensorFlow (161 allreduces
enqueued at once on host arrays, in place, then waited for: what the C++ benchmark's kolo row does),
in the same rounds, so the ratio does not depend on how busy the machine is; and the same C ABI
calls right after the same tf.function step, so that what TensorFlow's step leaves on the machine
(caches, its threads) weighs on both sides alike and the ratio is what kolo's ops themselves cost.

    kolorun -np 2 .venv/bin/python benchmarks/tf_gradient_set.py [--steps 4] [--rounds 15] [--json out.json]
"""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from gradient_set_bench import MPI, c_abi_step_of, median_times, mpi4py_modes, parse_args  # noqa: E402  before kolo: see there
from gradient_shapes import read_shapes  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

import kolo.tensorflow as kolo  # noqa: E402

args = parse_args(steps=4, rounds=15)  # short rounds: the modes interleave finely

kolo.init()
# The ranks share the machine's cores, as in tf_synthetic.py and pytorch_gradient_set.py: a rank's
# share for TensorFlow's kernels, so that idle pool threads do not spin on the cores kolo needs.
tf.config.threading.set_intra_op_parallelism_threads(max(1, (os.cpu_count() or 1) // kolo.local_size()))
tf.config.threading.set_inter_op_parallelism_threads(2)
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


@tf.function
def step_with_grouped():
    # What DistributedGradientTape(groups=1) does: one op for the set, enqueued once every gradient exists.
    return kolo.grouped_allreduce([p * 2.0 for p in params], op=kolo.Sum, name="grouped")


# Correct before timed: every tensor sums to twice the rank count.
for step in (step_with_kolo, step_with_grouped):
    check = step()
    assert all(float(tf.reshape(v, [-1])[0]) == 2 * size and float(tf.reshape(v, [-1])[-1]) == 2 * size
               for v in check)
del check


def local_step():
    [t.numpy() for t in step_alone()[:1]]  # the step's outputs exist once one is fetched


def kolo_step():
    [t.numpy() for t in step_with_kolo()[:1]]


def grouped_step():
    [t.numpy() for t in step_with_grouped()[:1]]


c_abi_step = c_abi_step_of(shapes)


def step_then_c_abi():
    local_step()
    c_abi_step()


C_ABI = "kolo's C ABI on host arrays, no TensorFlow"
AFTER_STEP = "tf.function step, then kolo's C ABI"
GROUPED = "tf.function step + one grouped_allreduce op"
modes = [("tf.function step, no communication", local_step),
         ("tf.function step + kolo.tensorflow allreduces", kolo_step),
         (GROUPED, grouped_step),
         (C_ABI, c_abi_step),
         (AFTER_STEP, step_then_c_abi)]
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
    grouped_time = med[GROUPED] - med["tf.function step, no communication"]
    after_step = med[AFTER_STEP] - med["tf.function step, no communication"]
    print("# kolo.tensorflow's communication / kolo's C ABI without TensorFlow, same rounds: %.3f per-tensor ops, "
          "%.3f one grouped op" % (comm_time / med[C_ABI], grouped_time / med[C_ABI]))
    print("# kolo.tensorflow's communication / kolo's C ABI after the same tf.function step: %.3f per-tensor ops, "
          "%.3f one grouped op (the C ABI's part: %.2f ms)" % (comm_time / after_step, grouped_time / after_step,
                                                               after_step * 1e3))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "tf_gradient_set", "ranks": size, "tensors": len(shapes), "elements": total,
                       "median_seconds": med, "kolo_communication_seconds": comm_time,
                       "vs_c_abi": comm_time / med[C_ABI], "grouped_vs_c_abi": grouped_time / med[C_ABI],
                       "vs_c_abi_after_step": comm_time / after_step, "grouped_vs_c_abi_after_step": grouped_time / after_step}, f, indent=2)
kolo.shutdown()
