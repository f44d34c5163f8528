"""The collectives kolo.keras needs, for the Keras backend in use: kolo.jax's custom calls on JAX,
tf.numpy_function over kolo's host path on TensorFlow (both with kolo.jax's signatures). Horovod's
signatures are kolo.keras.functions'; these are what the optimizer and callbacks call."""
import keras

from kolo._policy.naming import Namer
from kolo._policy.scaling import Adasum, Average, Sum  # noqa: F401

SUPPORTED = ("jax", "tensorflow")


def require_supported_backend(what):
    backend = keras.backend.backend()
    if backend not in SUPPORTED:
        raise NotImplementedError(
            "%s: kolo.keras runs on Keras' JAX and TensorFlow backends (set KERAS_BACKEND before importing "
            "keras); this process uses the %r backend" % (what, backend))


def _collectives():
    if keras.backend.backend() == "tensorflow":
        from kolo.keras import _tensorflow
        return _tensorflow
    from kolo.jax import collectives
    return collectives


# Unnamed calls are numbered as kolo._policy.naming numbers them: per kind and process set, in call order.
_namer = Namer("keras")


# process_set: a registered ProcessSet, or None for every rank.
def allreduce(value, name=None, op=Average, prescale_factor=1.0, postscale_factor=1.0, process_set=None):
    """`value` (a tensor, array or nested structure of them) reduced over the ranks: Average or Sum."""
    return _collectives().allreduce(value, op=op, name=_namer.name(name, "allreduce", process_set),
                                    prescale_factor=prescale_factor,
                                    postscale_factor=postscale_factor, process_set=process_set)


def broadcast(value, root_rank=0, name=None, process_set=None):
    """`value` as root_rank has it, on every rank."""
    return _collectives().broadcast(value, root_rank=root_rank, name=_namer.name(name, "broadcast", process_set),
                                    process_set=process_set)


def allgather(value, name=None, process_set=None):
    """Every rank's rows (first dimension) concatenated in rank order."""
    return _collectives().allgather(value, name=_namer.name(name, "allgather", process_set), process_set=process_set)


def reducescatter(value, name=None, op=Average, prescale_factor=1.0, postscale_factor=1.0, process_set=None):
    """`value` reduced over the ranks; this rank gets its block of the rows."""
    return _collectives().reducescatter(value, op=op, name=_namer.name(name, "reducescatter", process_set),
                                        prescale_factor=prescale_factor, postscale_factor=postscale_factor,
                                        process_set=process_set)
