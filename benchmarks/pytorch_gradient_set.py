"""ResNet-50's gradient set (161 float32 tensors, 25,557,032 elements) reduced from Python through
DistributedOptimizer's path: backward produces every gradient, a hook starts its allreduce, step()
waits for all. In the same run, the same bytes through mpi4py's Allreduce on host buffers (one call
of all bytes, and one call per tensor), the step without any communication, and the gradients, ready,
through DistributedOptimizer's synchronize() and through allreduce_async_ (the C++ benchmark's kolo row, from
Python), and that allreduce_async_ path right after the same backward + step: the reductions done after
backward instead of overlapped with it, with what backward leaves on the machine (its freshly written
memory) weighing on both sides alike.

    kolorun -np 2 python3 benchmarks/pytorch_gradient_set.py [--steps 10] [--rounds 3] [--json out.json]
"""
import json

from gradient_set_bench import MPI, median_times, mpi4py_modes, parse_args  # before kolo: see there
from gradient_shapes import read_shapes

import torch

import kolo.torch as kolo

args = parse_args()

kolo.init()
comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
torch.set_num_threads(1)

shapes = read_shapes(args.shapes)
# Two copies of the parameters: DistributedOptimizer hooks its own, the local baseline uses the other.
local_params = [torch.nn.Parameter(torch.zeros(s)) for _, s in shapes]
kolo_params = [torch.nn.Parameter(torch.zeros(s)) for _, s in shapes]
total = sum(p.numel() for p in local_params)
weights = [torch.zeros(p.shape) for p in local_params]  # the "loss" is sum(p * w): its gradients are w


def backward(params):
    loss = sum((p * w).sum() for p, w in zip(params, weights))
    loss.backward()


local_optimizer = torch.optim.SGD(local_params, lr=0.0)
kolo_optimizer = kolo.DistributedOptimizer(torch.optim.SGD(kolo_params, lr=0.0),
                                           named_parameters=[(n, p) for (n, _), p in zip(shapes, kolo_params)],
                                           op=kolo.Sum)


def local_step():
    local_optimizer.zero_grad()
    backward(local_params)
    local_optimizer.step()


def kolo_step():
    kolo_optimizer.zero_grad()
    backward(kolo_params)
    kolo_optimizer.step()


ready_grads = [torch.zeros(s) for _, s in shapes]


def kolo_ready():
    """The C++ benchmark's kolo row from Python: every gradient ready, one allreduce_async_ each, then
    synchronize each: what crossing into the engine costs, without backward sharing the cores."""
    handles = [kolo.allreduce_async_(g, name="ready." + n, op=kolo.Sum) for (n, _), g in zip(shapes, ready_grads)]
    for h in handles:
        kolo.synchronize(h)


for p in kolo_params:
    p.grad = torch.zeros_like(p)


def kolo_ready_synchronize():
    """DistributedOptimizer's own path with every gradient ready: synchronize() submits each (its
    per-parameter Python work, the crossing) and waits for all, without backward sharing the cores
    (and without the SGD update over 102 MB that step() then makes)."""
    kolo_optimizer.synchronize()
    kolo_optimizer._synchronized = False  # no step() follows: the next one must not warn


def local_step_then_ready():
    local_step()
    kolo_ready()


AFTER_STEP = "backward + step, then allreduce_async_ of ready"
modes = [("backward + step, no communication", local_step), ("kolo DistributedOptimizer (backward + step)", kolo_step),
         ("kolo DistributedOptimizer synchronize(), ready", kolo_ready_synchronize),
         ("kolo allreduce_async_ of ready gradients", kolo_ready), (AFTER_STEP, local_step_then_ready)]
modes += mpi4py_modes(comm, shapes)
med = median_times(comm, modes, args.rounds, args.steps)
if rank == 0:
    local = med["backward + step, no communication"]
    reference = med["mpi4py Allreduce, all bytes in one call"]
    print("# ResNet-50 gradient set: %d tensors, %d float32 elements (%.1f MB), sum, %d ranks" %
          (len(local_params), total, total * 4 / 1e6, size))
    print("# median of %d steps x %d rounds" % (args.steps, args.rounds))
    print("%-46s %12s %12s" % ("", "time (ms)", "vs one call"))
    for name, _ in modes:
        print("%-46s %12.2f %12.3f" % (name, med[name] * 1e3, med[name] / reference))
    comm_time = med["kolo DistributedOptimizer (backward + step)"] - local
    print("# kolo's communication beyond the local step: %.2f ms, %.3f x one mpi4py call of all bytes"
          % (comm_time * 1e3, comm_time / reference))
    print("# the ready gradients through kolo from Python: synchronize() %.3f, allreduce_async_ %.3f x one mpi4py "
          "call (compare the C++ resnet50_allreduce kolo row's ratio to one MPI_Allreduce)"
          % (med["kolo DistributedOptimizer synchronize(), ready"] / reference,
             med["kolo allreduce_async_ of ready gradients"] / reference))
    after_step = med[AFTER_STEP] - local
    print("# DistributedOptimizer's communication, overlapped with backward / the ready gradients' after the same "
          "backward + step: %.3f (their part: %.2f ms)" % (comm_time / after_step, after_step * 1e3))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "pytorch_gradient_set", "ranks": size, "tensors": len(local_params),
                       "elements": total, "median_seconds": med,
                       "kolo_communication_seconds": comm_time,
                       "vs_ready_after_step": comm_time / after_step}, f, indent=2)
kolo.shutdown()
