"""The collectives kolo.keras needs, for the Keras backend in use."""
import keras


def require_supported_backend(what):
    backend = keras.backend.backend()
    if backend != "jax":
        raise NotImplementedError(
            "%s: kolo.keras runs on Keras' JAX backend (set KERAS_BACKEND=jax before importing keras); "
            "this process uses the %r backend" % (what, backend))


def allreduce(tree, name, op, prescale_factor=1.0, postscale_factor=1.0):
    from kolo.jax import allreduce as jax_allreduce
    return jax_allreduce(tree, op=op, name=name, prescale_factor=prescale_factor, postscale_factor=postscale_factor)


def broadcast(tree, root_rank, name):
    from kolo.jax import broadcast as jax_broadcast
    return jax_broadcast(tree, root_rank=root_rank, name=name)
