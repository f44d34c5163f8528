"""kolo.keras on Keras' TensorFlow backend: the collectives as tf.numpy_function over kolo's host
path, so that they run inside the tf.function of Keras' train step. XLA cannot compile a Python
function: where Keras would compile the step with XLA (a machine with a GPU), pass
jit_compile=False to compile(). Same signatures as kolo.jax's."""
import keras
import tensorflow as tf

from kolo import _host, _process_sets
from kolo._core import _C


def _run(tree, name, collective, shape_of=lambda shape: shape):
    pairs = keras.tree.flatten_with_path(tree)
    if not pairs:
        return tree
    # Named as kolo.jax names pytree leaves: the call's name, then the path ("grads['dense/kernel']").
    names = [name + "".join("[%r]" % (key,) for key in path) for path, _ in pairs]
    leaves = [tf.convert_to_tensor(leaf) for _, leaf in pairs]
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
    set_id = _process_sets.set_id(process_set)
    return _run(tree, name, lambda arrays, names: _host.allreduce(arrays, names, op, prescale_factor, postscale_factor,
                                                                 set_id))


def broadcast(tree, root_rank, name, process_set=None):
    set_id = _process_sets.set_id(process_set)
    return _run(tree, name, lambda arrays, names: _host.broadcast(arrays, names, root_rank, set_id))


def allgather(tree, name, process_set=None):
    set_id = _process_sets.set_id(process_set)
    # The rows gathered are known only when it runs (ranks may give different counts).
    return _run(tree, name, lambda arrays, names: _host.allgather(arrays, names, set_id),
                lambda shape: tf.TensorShape([None]).concatenate(shape[1:]))


def reducescatter(tree, op, name, prescale_factor=1.0, postscale_factor=1.0, process_set=None):
    set_id = _process_sets.set_id(process_set)
    rank, size = _host.set_place(set_id)

    def block(shape):
        rows = shape[0]
        return tf.TensorShape([None if rows is None else _C.reducescatter_rows(rows, rank, size)]).concatenate(
            shape[1:])
    return _run(tree, name, lambda arrays, names: _host.reducescatter(arrays, names, op, prescale_factor,
                                                                     postscale_factor, set_id), block)
