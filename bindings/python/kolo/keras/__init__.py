"""kolo for Keras 3 (JAX and TensorFlow backends), with Horovod's Keras names:

    import keras
    import kolo.keras as kolo
    kolo.init()
    model.compile(optimizer=kolo.DistributedOptimizer(keras.optimizers.SGD(0.01 * kolo.size())), ...)
    model.fit(x_shard, y_shard, callbacks=[kolo.BroadcastGlobalVariablesCallback(0),
                                           kolo.MetricAverageCallback()], verbose=kolo.rank() == 0)
"""
from kolo._policy.exports import *  # noqa: F401,F403 (the names every binding exports)
from kolo._policy import exports as _exports
from kolo._host_objects import allgather_object, broadcast_object
from kolo.keras import callbacks, elastic
from kolo.keras.callbacks import (BestModelCheckpoint, BroadcastGlobalVariablesCallback, LearningRateScheduleCallback,
                                  LearningRateWarmupCallback, MetricAverageCallback)
from kolo.keras.compression import Compression
from kolo.keras.functions import (allgather, allreduce, broadcast, broadcast_global_variables, broadcast_variables,
                                  reducescatter)
from kolo.keras.optimizer import DistributedOptimizer, PartialDistributedOptimizer
from kolo.keras.saving import load_model

# The shared names, then what every binding supplies itself (exports.PER_BINDING), then this one's own.
__all__ = _exports.__all__ + ["allreduce", "allgather", "broadcast", "reducescatter", "Compression", "broadcast_object",
                              "allgather_object", "elastic"] + [
    "DistributedOptimizer", "BroadcastGlobalVariablesCallback", "MetricAverageCallback", "LearningRateWarmupCallback",
    "LearningRateScheduleCallback", "BestModelCheckpoint", "PartialDistributedOptimizer", "broadcast_global_variables",
    "broadcast_variables", "load_model", "callbacks"]
