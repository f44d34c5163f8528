"""kolo.keras on Keras' TensorFlow backend: the collectives are kolo.tensorflow's ops (C++ kernels over
kolo's engine, inside the tf.function of Keras' train step, no copies through Python). Where those
ops were not built for this TensorFlow (kolo built with another Python), they fall back to
tf.numpy_function over kolo's host path, which XLA cannot compile: pass jit_compile=False to
compile() there. Same signatures as kolo.jax's."""
import keras
import tensorflow as tf

from kolo import _host, _process_sets
from kolo._abi import _C

try:
    from kolo.tensorflow import mpi_ops as _ops
except ImportError:  # kolo's TensorFlow ops were not built for this TensorFlow
    _ops = None

# Collectives that only move bytes carry other dtypes as a supported one of the same width (Keras
# keeps its seed generators' state in uint32).
_CARRIERS = {1: tf.uint8, 2: tf.float16, 4: tf.int32, 8: tf.int64}


def _leaves(tree, name):
    pairs = keras.tree.flatten_with_path(tree)
    # Named as kolo.jax names pytree leaves: the call's name, then the path ("grads['dense/kernel']").
    names = [name + "".join("[%r]" % (key,) for key in path) for path, _ in pairs]
    return [tf.convert_to_tensor(leaf) for _, leaf in pairs], names


def _carried(leaf, moves_bytes):
    if _ops is None or leaf.dtype in _ops._SUPPORTED or not moves_bytes or leaf.dtype.is_complex:
        return leaf, None
    carrier = _CARRIERS.get(leaf.dtype.size)
    return (tf.bitcast(leaf, carrier), leaf.dtype) if carrier is not None else (leaf, None)


def _map(tree, name, op, moves_bytes=False):
    leaves, names = _leaves(tree, name)
    if not leaves:
        return tree
    outs = []
    for leaf, leaf_name in zip(leaves, names):
        carried, original = _carried(leaf, moves_bytes)
        out = op(carried, leaf_name)
        outs.append(tf.bitcast(out, original) if original is not None else out)
    return keras.tree.pack_sequence_as(tree, outs)


def _run_on_host(tree, name, collective, shape_of=lambda shape: shape):
    leaves, names = _leaves(tree, name)
    if not leaves:
        return tree
    if len(leaves) == 1:  # numpy_function takes one result as the whole output, not as a list of one
        outs = [tf.numpy_function(lambda array: collective([array], names)[0], leaves, Tout=leaves[0].dtype,
                                  stateful=True, name="kolo")]
    else:
        outs = tf.numpy_function(lambda *arrays: tuple(collective(arrays, names)), leaves,
                                 Tout=[leaf.dtype for leaf in leaves], stateful=True, name="kolo")
    for out, leaf in zip(outs, leaves):
        out.set_shape(shape_of(leaf.shape))
    return keras.tree.pack_sequence_as(tree, outs)


# process_set: a registered ProcessSet (kolo.jax's signatures).
def allreduce(tree, op, name, prescale_factor=1.0, postscale_factor=1.0, process_set=None):
    ps = process_set or _process_sets.global_process_set
    if _ops is not None:
        return _map(tree, name, lambda t, n: _ops._allreduce(t, n, op, prescale_factor, postscale_factor, ps))
    set_id = _process_sets.set_id(process_set)
    return _run_on_host(tree, name, lambda arrays, names: _host.allreduce(arrays, names, op, prescale_factor,
                                                                         postscale_factor, set_id))


def broadcast(tree, root_rank, name, process_set=None):
    ps = process_set or _process_sets.global_process_set
    if _ops is not None:
        return _map(tree, name, lambda t, n: _ops.broadcast(t, root_rank, n, process_set=ps), moves_bytes=True)
    set_id = _process_sets.set_id(process_set)
    return _run_on_host(tree, name, lambda arrays, names: _host.broadcast(arrays, names, root_rank, set_id))


def allgather(tree, name, process_set=None):
    ps = process_set or _process_sets.global_process_set
    if _ops is not None:
        return _map(tree, name, lambda t, n: _ops.allgather(t, n, process_set=ps), moves_bytes=True)
    set_id = _process_sets.set_id(process_set)
    # The rows gathered are known only when it runs (ranks may give different counts).
    return _run_on_host(tree, name, lambda arrays, names: _host.allgather(arrays, names, set_id),
                        lambda shape: tf.TensorShape([None]).concatenate(shape[1:]))


def reducescatter(tree, op, name, prescale_factor=1.0, postscale_factor=1.0, process_set=None):
    ps = process_set or _process_sets.global_process_set
    set_id = _process_sets.set_id(process_set)
    rank, size = _host.set_place(set_id)

    def block(shape):
        rows = shape[0]
        return tf.TensorShape([None if rows is None else _C.reducescatter_rows(rows, rank, size)]).concatenate(
            shape[1:])
    if _ops is not None:
        def one(t, n):
            out = _ops._reducescatter(t, n, op, prescale_factor, postscale_factor, ps)
            out.set_shape(block(t.shape))
            return out
        return _map(tree, name, one)
    return _run_on_host(tree, name, lambda arrays, names: _host.reducescatter(arrays, names, op, prescale_factor,
                                                                             postscale_factor, set_id), block)
