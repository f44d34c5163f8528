"""kolo on Ray: horovod.ray's RayExecutor, so that `from horovod.ray import RayExecutor` ports by its import.

    from kolo.ray import RayExecutor

Ray Train's TorchTrainer needs nothing from here: TorchConfig(backend="kolo") runs a DDP loop on kolo's
torch.distributed backend (docs/ray.md). Ray is imported when RayExecutor is first used.
"""
__all__ = ["RayExecutor", "RaySettings"]


def __getattr__(name):
    if name == "RayExecutor":
        from kolo.ray._executor import RayExecutor
        return RayExecutor
    if name == "RaySettings":
        from kolo.ray._settings import RaySettings
        return RaySettings
    raise AttributeError("module 'kolo.ray' has no attribute %r" % name)
