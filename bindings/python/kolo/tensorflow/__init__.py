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

from kolo._core import (QUERIES, HorovodInternalError, KoloError, KoloValueError, ccl_built, cross_rank, cross_size,
                        cuda_built, ddl_built, gloo_built, gloo_enabled, init, is_homogeneous, is_initialized,
                        local_rank, local_size, mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, rank,
                        rocm_built, shutdown, size, start_timeline, stop_timeline)
from kolo._mesh import Mesh, mesh
from kolo._process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set
from kolo.tensorflow.collectives import allreduce, grouped_allreduce, grouped_reducescatter, reducescatter
from kolo.tensorflow.compression import Compression
from kolo.tensorflow import util
from kolo.tensorflow.functions import (BroadcastGlobalVariablesHook, allgather_object, broadcast_global_variables,
                                        broadcast_object, broadcast_object_fn, broadcast_variables)
from kolo.tensorflow import elastic  # noqa: E402 (Horovod's hvd.elastic)
from kolo.tensorflow.util import _executing_eagerly  # horovod.tensorflow has it at the top, as hvd._executing_eagerly
from kolo.tensorflow.gradient_tape import DistributedGradientTape, PartialDistributedGradientTape
from kolo.tensorflow.mpi_ops import (Adasum, Average, Max, Min, Product, Sum, allgather, alltoall, barrier, broadcast,
                                     broadcast_, grouped_allgather, join, local_rank_op, local_size_op,
                                     process_set_included_op, rank_op, size_op)

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank", "cross_size",
           "cross_rank", "mpi_threads_supported", "is_homogeneous", "size_op", "local_size_op", "rank_op",
           "local_rank_op", "process_set_included_op", "allreduce", "grouped_allreduce", "allgather",
           "grouped_allgather", "broadcast", "broadcast_", "alltoall", "reducescatter", "grouped_reducescatter",
           "join", "barrier", "Sum", "Average", "Min", "Max", "Product", "Adasum", "Compression",
           "broadcast_variables", "broadcast_object", "allgather_object", "DistributedGradientTape", "ProcessSet",
           "global_process_set", "add_process_set", "remove_process_set", "mesh", "Mesh", "KoloError",
           "KoloValueError", "HorovodInternalError", "DistributedOptimizer", "SyncBatchNormalization",
           "PartialDistributedGradientTape", "broadcast_object_fn", "broadcast_global_variables",
           "BroadcastGlobalVariablesHook", "elastic"] + list(QUERIES)


def __getattr__(name):
    # The Keras pieces import Keras (its TensorFlow backend) only when asked for.
    if name in ("DistributedOptimizer", "SyncBatchNormalization"):
        from kolo.tensorflow import keras_parts
        return getattr(keras_parts, name)
    raise AttributeError("module 'kolo.tensorflow' has no attribute %r" % name)
