"""kolo's XLA FFI handlers (src/jax_ffi.cc), loaded once and registered with JAX as custom-call
targets "kolo_allreduce", "kolo_allgather", "kolo_broadcast" and "kolo_reducescatter": for the CPU platform, and for the
CUDA platform where JAX has GPUs (the handlers then take XLA's stream)."""
import ctypes
import os
import threading

import jax

_lock = threading.Lock()
_registered = False
OPS = ("allreduce", "allgather", "broadcast", "reducescatter")


def _has_gpus():
    try:
        return len(jax.devices("cuda")) > 0
    except RuntimeError:  # no CUDA backend in this jax
        return False


def target(op):
    """The custom-call target name of a kolo op, registering the handlers on first use."""
    global _registered
    with _lock:
        if not _registered:
            path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libkolo_xla_ffi.so")
            if not os.path.exists(path):
                raise ImportError(
                    "kolo.jax's XLA handlers (%s) were not built: configure kolo with a Python that has jax, "
                    "e.g. cmake -DKOLO_JAX_PYTHON=.venv/bin/python (.ci/setup does this)" % path)
            library = ctypes.cdll.LoadLibrary(path)
            for name in OPS:
                jax.ffi.register_ffi_target("kolo_" + name, jax.ffi.pycapsule(getattr(library, "kolo_jax_" + name)),
                                            platform="cpu")
            if _has_gpus():
                for name in OPS:
                    jax.ffi.register_ffi_target("kolo_" + name,
                                                jax.ffi.pycapsule(getattr(library, "kolo_jax_%s_cuda" % name)),
                                                platform="CUDA")
            _registered = True
    return "kolo_" + op
