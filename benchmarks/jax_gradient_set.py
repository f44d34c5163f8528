"""ResNet-50's gradient set (161 float32 tensors, 25,557,032 elements) as a JAX pytree, reduced by
kolo.jax inside a jitted step (one XLA custom call; kolo fuses the leaves), against the same bytes
through mpi4py's Allreduce on host buffers (one call of all bytes, and one call per tensor), in the
same run. The step makes the gradients (x * 2, standing in for backward), so that they are
temporaries of the compiled program as in training; the same step without kolo is the baseline.

The issue's yardstick is kolo's own C ABI on the same bytes without JAX (161 allreduces enqueued at
once on host arrays, in place, then waited for: what the C++ benchmark's kolo row does), in the same
rounds, alone and right after the same jitted step, so that what the step leaves on the machine (its
freshly written memory, XLA's threads) weighs on both sides alike (as tf_gradient_set.py does).

    kolorun -np 2 .venv/bin/python benchmarks/jax_gradient_set.py [--steps 4] [--rounds 15] [--json out.json]
"""
import json

from gradient_set_bench import MPI, c_abi_step_of, median_times, mpi4py_modes, parse_args  # before kolo: see there
from gradient_shapes import read_shapes

import jax
import jax.numpy as jnp
import numpy as np

import kolo.jax as kolo

args = parse_args(steps=4, rounds=15)  # short rounds: the modes interleave finely

kolo.init()
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size

shapes = read_shapes(args.shapes)
grads = {name: jnp.full(shape, 1.0, jnp.float32) for name, shape in shapes}
total = sum(int(np.prod(s)) for _, s in shapes)


def make_gradients(params):
    return jax.tree_util.tree_map(lambda p: p * 2.0, params)


step_alone = jax.jit(make_gradients)
step_with_kolo = jax.jit(lambda p: kolo.allreduce(make_gradients(p), op=kolo.Sum, name="grads"))
# Correct before timed: every leaf sums to twice the rank count.
check = step_with_kolo(grads)
assert all(float(v.reshape(-1)[0]) == 2 * size and float(v.reshape(-1)[-1]) == 2 * size for v in check.values())
del check


def local_step():
    jax.block_until_ready(step_alone(grads))


def kolo_step():
    jax.block_until_ready(step_with_kolo(grads))


c_abi_step = c_abi_step_of(shapes)


def step_then_c_abi():
    local_step()
    c_abi_step()


C_ABI = "kolo's C ABI on host arrays, no JAX"
AFTER_STEP = "jitted step, then kolo's C ABI"
modes = [("jitted step, no communication", local_step), ("jitted step + kolo.jax allreduce of the pytree", kolo_step),
         (C_ABI, c_abi_step), (AFTER_STEP, step_then_c_abi)]
modes += mpi4py_modes(comm, shapes)
med = median_times(comm, modes, args.rounds, args.steps)
if rank == 0:
    one_call = med["mpi4py Allreduce, all bytes in one call"]
    per_tensor = med["mpi4py Allreduce per tensor"]
    print("# ResNet-50 gradient set as a JAX pytree: %d tensors, %d float32 elements (%.1f MB), sum, %d ranks"
          % (len(shapes), total, total * 4 / 1e6, size))
    print("# median of %d steps x %d rounds, jax %s" % (args.steps, args.rounds, jax.__version__))
    print("%-48s %10s %12s %14s" % ("", "time (ms)", "vs one call", "vs per tensor"))
    for name, _ in modes:
        print("%-48s %10.2f %12.3f %14.3f" % (name, med[name] * 1e3, med[name] / one_call, med[name] / per_tensor))
    comm_time = med["jitted step + kolo.jax allreduce of the pytree"] - med["jitted step, no communication"]
    print("# kolo.jax's communication beyond the step: %.2f ms, %.3f x one mpi4py call of all bytes, "
          "%.3f x mpi4py per tensor" % (comm_time * 1e3, comm_time / one_call, comm_time / per_tensor))
    after_step = med[AFTER_STEP] - med["jitted step, no communication"]
    print("# kolo.jax's communication / kolo's C ABI without JAX, same rounds: %.3f" % (comm_time / med[C_ABI]))
    print("# kolo.jax's communication / kolo's C ABI after the same jitted step: %.3f (the C ABI's part: %.2f ms)"
          % (comm_time / after_step, after_step * 1e3))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "jax_gradient_set", "ranks": size, "tensors": len(shapes), "elements": total,
                       "median_seconds": med, "kolo_communication_seconds": comm_time,
                       "vs_c_abi": comm_time / med[C_ABI], "vs_c_abi_after_step": comm_time / after_step}, f, indent=2)
kolo.shutdown()
