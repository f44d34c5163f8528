"""kolo on Ray: horovod.ray's RayExecutor, so that `from horovod.ray import RayExecutor` ports by its import; and
KoloConfig, Ray Train's backend config for a DataParallelTrainer whose loop uses Horovod's API (kolo.torch,
kolo.tensorflow, kolo.keras, kolo.jax).

    from kolo.ray import RayExecutor, KoloConfig

Ray Train's TorchTrainer with a DDP loop needs neither: TorchConfig(backend="kolo") runs it on kolo's
torch.distributed backend (docs/ray.md). Ray is imported when one of these is first used.
"""
__all__ = ["RayExecutor", "RaySettings", "KoloConfig", "ray_logger"]


def __getattr__(name):
    if name == "RayExecutor":
        from kolo.ray._executor import RayExecutor
        return RayExecutor
    if name == "KoloConfig":
        from kolo.ray._train_backend import KoloConfig
        return KoloConfig
    if name == "RaySettings":
        from kolo.ray._settings import RaySettings
        return RaySettings
    raise AttributeError("module 'kolo.ray' has no attribute %r" % name)
