"""kolo for Keras 3 (JAX and TensorFlow backends), with Horovod's Keras names:

    import keras
    import kolo.keras as kolo
    kolo.init()
    model.compile(optimizer=kolo.DistributedOptimizer(keras.optimizers.SGD(0.01 * kolo.size())), ...)
    model.fit(x_shard, y_shard, callbacks=[kolo.BroadcastGlobalVariablesCallback(0),
                                           kolo.MetricAverageCallback()], verbose=kolo.rank() == 0)
"""
from kolo._core import (QUERIES, HorovodInternalError, KoloError, KoloValueError, ccl_built, cross_rank, cross_size,
                        cuda_built, ddl_built, gloo_built, gloo_enabled, init, is_homogeneous, is_initialized,
                        local_rank, local_size, mpi_built, mpi_enabled, mpi_threads_supported, nccl_built, rank,
                        rocm_built, shutdown, size, start_timeline, stop_timeline)
from kolo.keras import callbacks, elastic
from kolo.keras.callbacks import (BestModelCheckpoint, BroadcastGlobalVariablesCallback, LearningRateScheduleCallback,
                                  LearningRateWarmupCallback, MetricAverageCallback)
from kolo.keras.compression import Compression
from kolo.keras.functions import (allgather, allreduce, broadcast, broadcast_global_variables, broadcast_variables,
                                  reducescatter)
from kolo.keras.optimizer import DistributedOptimizer, PartialDistributedOptimizer
from kolo.keras.saving import load_model
from kolo.keras._backend import Adasum, Average, Sum

__all__ = ["init", "shutdown", "is_initialized", "size", "rank", "local_size", "local_rank", "cross_size",
           "cross_rank", "mpi_threads_supported", "DistributedOptimizer", "BroadcastGlobalVariablesCallback",
           "MetricAverageCallback", "LearningRateWarmupCallback", "LearningRateScheduleCallback", "BestModelCheckpoint",
           "PartialDistributedOptimizer", "Compression", "Adasum", "Average", "Sum", "allreduce", "allgather", "broadcast",
           "reducescatter", "broadcast_global_variables", "broadcast_variables", "load_model", "callbacks",
           "KoloError", "KoloValueError", "elastic"]
from kolo._mesh import Mesh, mesh
from kolo._process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set

__all__ += ["HorovodInternalError", "ProcessSet", "global_process_set", "add_process_set",
            "remove_process_set", "mesh", "Mesh"] + list(QUERIES)
