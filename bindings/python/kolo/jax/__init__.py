"""kolo for JAX: data-parallel training across processes and hosts.

    import kolo.jax as kolo
    kolo.init()
    params = kolo.broadcast_variables(params, root_rank=0)
    ...
    @jax.jit
    def train_step(params, batch):
        grads = jax.grad(loss)(params, batch)
        grads = kolo.allreduce(grads)          # averaged over ranks, inside the compiled step
        ...

Collectives take arrays or whole pytrees (one fused request per call) and work both inside
jax.jit (as XLA custom calls, on the buffers XLA owns) and on concrete arrays outside it.
"""
from kolo import _frameworks

_frameworks.require("jax")  # before anything imports jax: a clear error where it cannot

from kolo._policy.exports import *  # noqa: F401,F403 (the names every binding exports)
from kolo._policy import exports as _exports
from kolo._host_objects import allgather_object, broadcast_object
from kolo.jax.collectives import allgather, allreduce, barrier, broadcast, broadcast_variables, reducescatter
from kolo.jax.compression import Compression
from kolo.jax import elastic  # noqa: E402 (as Horovod's hvd.elastic in its other bindings)

# The shared names, then what every binding supplies itself (exports.PER_BINDING), then this one's own.
__all__ = _exports.__all__ + ["allreduce", "allgather", "broadcast", "reducescatter", "Compression", "broadcast_object",
                              "allgather_object", "elastic"] + ["broadcast_variables", "barrier"]
