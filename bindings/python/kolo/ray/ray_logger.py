"""horovod.ray.ray_logger's: values a worker sends to the driver, where RayExecutor.run's callbacks receive them
while the run goes on (Ray Tune's reporting, a progress line).

    from kolo.ray import ray_logger         # was: from horovod.ray import ray_logger
    ray_logger.log({"epoch": epoch, "loss": loss})     # sent from rank 0 only, unless chief_only=False

Without callbacks given to run(), log() warns once and sends nothing.
"""
import os
import warnings

_queue = None
_warned = False


def configure(queue):
    """Where log() sends (the run's queue; None: nowhere). The executor calls it on every worker."""
    global _queue
    _queue = queue


def _rank():
    from kolo import _lifecycle
    if _lifecycle.is_initialized():
        from kolo._abi import _C
        return _C.rank()  # the rank now, after an elastic job's ranks changed
    return int(os.environ.get("RANK", os.environ.get("HOROVOD_RANK", "-1")))


def log(info_dict, chief_only=True):
    """Sends `info_dict` (anything Ray can serialize) to the driver's callbacks: from rank 0 only, or, with
    chief_only=False, from every rank."""
    global _warned
    if chief_only and _rank() != 0:
        return
    if _queue is not None:
        _queue.put(info_dict)
    elif not _warned:
        warnings.warn("kolo.ray.ray_logger.log: nothing receives it (give RayExecutor.run callbacks)")
        _warned = True
