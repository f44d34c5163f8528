"""kolo for TensorFlow 2, with Horovod's names: ``import kolo.tensorflow as hvd`` ports a Horovod
TensorFlow script.

    import kolo.tensorflow as hvd
    hvd.init()
    opt = tf.keras.optimizers.SGD(0.01 * hvd.size())
    @tf.function
    def step(images, labels, first_batch):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images, training=True))
        tape = hvd.DistributedGradientTape(tape)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        if first_batch:
            hvd.broadcast_variables(model.variables, root_rank=0)
            hvd.broadcast_variables(opt.variables, root_rank=0)
        return loss

The collectives are TensorFlow ops (C++ asynchronous kernels over kolo's engine), eager and inside
tf.function, differentiable.
"""
from kolo import _frameworks

_frameworks.require("tensorflow")  # before anything imports tensorflow: a clear error where it cannot

from kolo._policy.exports import *  # noqa: F401,F403 (the names every binding exports)
from kolo._policy import exports as _exports
from kolo.tensorflow.collectives import allreduce, grouped_allreduce, grouped_reducescatter, reducescatter
from kolo.tensorflow.compression import Compression
from kolo.tensorflow import util
from kolo.tensorflow.functions import (BroadcastGlobalVariablesHook, allgather_object, broadcast_global_variables,
                                        broadcast_object, broadcast_object_fn, broadcast_variables)
from kolo.tensorflow import elastic  # noqa: E402 (Horovod's hvd.elastic)
from kolo.tensorflow.util import _executing_eagerly  # horovod.tensorflow has it at the top, as hvd._executing_eagerly
from kolo.tensorflow.gradient_tape import DistributedGradientTape, PartialDistributedGradientTape
from kolo.tensorflow.mpi_ops import (allgather, alltoall, barrier, broadcast, broadcast_, grouped_allgather, join,
                                     local_rank_op, local_size_op, process_set_included_op, rank_op, size_op)

# Keras' pieces of horovod.tensorflow: Keras code lives under kolo.keras, which has them.
_KERAS_PARTS = ("DistributedOptimizer", "SyncBatchNormalization")

# The shared names, then what every binding supplies itself (exports.PER_BINDING), then this one's own.
__all__ = _exports.__all__ + ["allreduce", "allgather", "broadcast", "reducescatter", "Compression", "broadcast_object",
                              "allgather_object", "elastic"] + [
    "size_op", "local_size_op", "rank_op", "local_rank_op", "process_set_included_op", "grouped_allreduce",
    "grouped_allgather", "broadcast_", "alltoall", "grouped_reducescatter", "join", "barrier", "broadcast_variables",
    "DistributedGradientTape", "PartialDistributedGradientTape", "broadcast_object_fn", "broadcast_global_variables",
    "BroadcastGlobalVariablesHook", "DistributedOptimizer", "SyncBatchNormalization"]


def __getattr__(name):
    # Imported only when asked for: they import Keras (its TensorFlow backend) and kolo.keras.
    if name in _KERAS_PARTS:
        from kolo.keras import tensorflow_parts
        return getattr(tensorflow_parts, name)
    raise AttributeError("module 'kolo.tensorflow' has no attribute %r" % name)
