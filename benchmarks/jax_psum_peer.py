"""kolo.jax's allreduce inside `jax.jit` against JAX's own cross-process reduction: a `psum` under
`shard_map` over a mesh of every process's CPU device, with JAX's CPU collectives on gloo
(`jax_cpu_collectives_implementation="gloo"`, `jax.distributed.initialize`). One float32 up to 16 MiB,
each a sum over the ranks, the two taking turns in the same run: one op between barriers (the slowest
rank's time of it, median over the iterations), and 20 ops back to back, dispatched without waiting
(the slowest rank's time over 20, median over the iterations).

    kolorun -np 2 .venv/bin/python benchmarks/jax_psum_peer.py [--iterations 60] [--bytes 4,4096,1048576,16777216]
"""
import argparse
import os
import statistics
import time

from mpi4py import MPI  # before kolo and JAX: MPI starts with MPI_THREAD_MULTIPLE

import jax

jax.config.update("jax_cpu_collectives_implementation", "gloo")
jax.config.update("jax_platforms", "cpu")

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import Mesh, NamedSharding, PartitionSpec  # noqa: E402

try:
    from jax import shard_map  # jax >= 0.7
except ImportError:  # pragma: no cover - older jax
    from jax.experimental.shard_map import shard_map

import kolo.jax as kolo  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--iterations", type=int, default=60)
parser.add_argument("--warmup", type=int, default=10)
parser.add_argument("--bytes", default="4,4096,1048576,16777216")
parser.add_argument("--port", type=int, default=29611)
args = parser.parse_args()

comm = MPI.COMM_WORLD
rank, size = comm.rank, comm.size
jax.distributed.initialize(coordinator_address="%s:%d" % (os.environ.get("KOLO_BENCH_COORDINATOR", "127.0.0.1"),
                                                          args.port), num_processes=size, process_id=rank)
kolo.init()

mesh = Mesh(np.array(jax.devices()), ("ranks",))  # one CPU device per process
spec = PartitionSpec("ranks")
sharding = NamedSharding(mesh, spec)
local = jax.local_devices()[0]


def jax_psum_of(elements):
    """JAX's step: a global array of every rank's block, psum'd across the mesh (gloo between processes)."""
    reduce = jax.jit(shard_map(lambda x: jax.lax.psum(x, "ranks"), mesh=mesh, in_specs=spec, out_specs=spec))
    block = jax.device_put(jnp.ones((elements,), jnp.float32), local)
    whole = jax.make_array_from_single_device_arrays((elements * size,), sharding, [block])
    expected = float(size)

    def step(times=1):
        for _ in range(times):
            out = reduce(whole)
        out.block_until_ready()
        return out.addressable_shards[0].data
    return step, expected


def kolo_of(elements):
    """kolo.jax's step: this rank's array, summed over the ranks by kolo inside the jitted program."""
    reduce = jax.jit(lambda x: kolo.allreduce(x, op=kolo.Sum, name="peer.%d" % elements))
    x = jax.device_put(jnp.ones((elements,), jnp.float32), local)

    def step(times=1):
        for _ in range(times):
            out = reduce(x)
        return out.block_until_ready()
    return step, float(size)


BACK_TO_BACK = 20


def timed(step, times=1):
    comm.Barrier()
    start = time.perf_counter()
    out = step(times)
    mine = (time.perf_counter() - start) / times
    return comm.allreduce(mine, op=MPI.MAX), out


rows = []
for nbytes in [int(b) for b in args.bytes.split(",")]:
    elements = max(1, nbytes // 4)
    sides = {"kolo.jax in jit": kolo_of(elements), "JAX psum (gloo)": jax_psum_of(elements)}
    samples = {(name, times): [] for name in sides for times in (1, BACK_TO_BACK)}
    for i in range(args.warmup + args.iterations):
        for (name, times), kept in samples.items():
            step, expected = sides[name]
            seconds, out = timed(step, times)
            if i == 0:  # right before it is timed
                got = np.asarray(out)
                assert got.shape == (elements,) and float(got[0]) == expected and float(got[-1]) == expected, (name, got)
            if i >= args.warmup:
                kept.append(seconds)
    for times in (1, BACK_TO_BACK):
        kolo_s = statistics.median(samples[("kolo.jax in jit", times)])
        jax_s = statistics.median(samples[("JAX psum (gloo)", times)])
        rows.append((elements * 4, "one op" if times == 1 else "%d in a row" % times, kolo_s, jax_s))

if rank == 0:
    print("# one float32 sum allreduce inside jax.jit, %d ranks, jax %s; median of %d, in turns; "
          "ratio = kolo.jax / JAX's psum; per op" % (size, jax.__version__, args.iterations))
    print("%-12s %-12s %14s %16s %8s" % ("bytes", "timed", "kolo.jax (ms)", "JAX psum (ms)", "ratio"))
    for nbytes, timed_as, kolo_s, jax_s in rows:
        print("%-12d %-12s %14.3f %16.3f %8.3f" % (nbytes, timed_as, kolo_s * 1e3, jax_s * 1e3, kolo_s / jax_s))
jax.distributed.shutdown()
