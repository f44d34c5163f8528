"""horovod.tensorflow.util's helper that scripts reach as hvd.util._executing_eagerly()."""
import tensorflow as tf


def _executing_eagerly():
    """Whether TensorFlow runs eagerly here (not inside tf.function or a TensorFlow 1 graph)."""
    return tf.executing_eagerly()
