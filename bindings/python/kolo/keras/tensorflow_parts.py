"""horovod.tensorflow's Keras pieces on Keras 3's TensorFlow backend: DistributedOptimizer (for Keras
optimizers; kolo.keras's, with horovod.tensorflow's signature) and SyncBatchNormalization. Keras code
lives under kolo.keras only; kolo.tensorflow hands these two names out from here when asked for them."""
import keras
import tensorflow as tf

from kolo import _process_sets
from kolo._process_sets import global_process_set
from kolo.keras.optimizer import DistributedOptimizer as keras_optimizer
from kolo.tensorflow import mpi_ops
from kolo.tensorflow.compression import Compression
from kolo.tensorflow.mpi_ops import Average, Sum


def DistributedOptimizer(optimizer, name=None, use_locking=False, device_dense="", device_sparse="",
                         compression=Compression.none, sparse_as_dense=False, backward_passes_per_step=1,
                         op=Average, gradient_predivide_factor=1.0, average_aggregated_gradients=False,
                         num_groups=0, groups=None, process_set=global_process_set, scale_local_gradients=True):
    """A Keras optimizer whose gradients are reduced across ranks inside the train step (see
    kolo.keras.DistributedOptimizer). TensorFlow 1's tf.compat.v1 optimizers are not supported."""
    if not isinstance(optimizer, keras.optimizers.Optimizer):
        raise ValueError("kolo.tensorflow.DistributedOptimizer wraps Keras optimizers (keras.optimizers.*); for a "
                         "custom loop use DistributedGradientTape. Got %s" % type(optimizer).__name__)
    return keras_optimizer(optimizer, name=name, device_dense=device_dense, device_sparse=device_sparse,
                           compression=compression, sparse_as_dense=sparse_as_dense,
                           gradient_predivide_factor=gradient_predivide_factor, op=op,
                           backward_passes_per_step=backward_passes_per_step,
                           average_aggregated_gradients=average_aggregated_gradients, num_groups=num_groups,
                           groups=groups, process_set=process_set, scale_local_gradients=scale_local_gradients)


class SyncBatchNormalization(keras.layers.BatchNormalization):
    """Batch normalization whose training statistics are those of every rank's rows together (every
    rank of `process_set`): Horovod's hvd.SyncBatchNormalization. The mean comes first (the ranks'
    sums and counts, one allreduce), then the variance about it (a second): no cancellation between
    large sums. Gradients flow through the allreduces, so the input's gradient is the whole batch's."""

    def __init__(self, *args, process_set=global_process_set, fused=False, **kwargs):
        # Horovod's takes tf.keras' `fused` and allows only False (a fused kernel would not synchronize);
        # Keras 3 has no such argument.
        if fused:
            raise ValueError("SyncBatchNormalization does not support fused=True (its statistics come from "
                             "every rank; a fused kernel would compute them on this rank alone)")
        super().__init__(*args, **kwargs)
        self._kolo_process_set = process_set

    def _moments(self, inputs, mask):
        if mask is not None or _process_sets.set_size(self._kolo_process_set) == 1:
            return super()._moments(inputs, mask)
        axes = list(self._reduction_axes)
        wide = tf.float32 if inputs.dtype in (tf.float16, tf.bfloat16) else inputs.dtype
        x = tf.cast(inputs, wide)
        name = "%s.moments" % self.name
        count = tf.cast(tf.reduce_prod(tf.gather(tf.shape(x), axes)), wide)
        sums = mpi_ops._allreduce(tf.concat([tf.reduce_sum(x, axes), count[None]], 0), name + ".sum", Sum,
                                  process_set=self._kolo_process_set)
        total = sums[-1]
        mean = sums[:-1] / total
        centred = tf.reduce_sum(tf.square(x - mean), axes)
        variance = mpi_ops._allreduce(centred, name + ".var", Sum, process_set=self._kolo_process_set) / total
        return tf.cast(mean, inputs.dtype), tf.cast(variance, inputs.dtype)
