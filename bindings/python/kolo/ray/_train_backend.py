"""Ray Train's backend for kolo: KoloConfig, for a DataParallelTrainer whose loop uses kolo.torch, kolo.tensorflow,
kolo.keras or kolo.jax (Horovod's API) rather than torch.distributed. The trainer's controller serves the job's
store, as RayExecutor's driver does; before the loop starts, each worker takes the store's address and its place
from Ray Train's context (its world rank, and its local rank among the workers of its node)."""
import os
import secrets
from dataclasses import dataclass

from ray.train.backend import Backend, BackendConfig


@dataclass
class KoloConfig(BackendConfig):
    """timeout_s: how long the ranks wait for each other to start (KOLO_GLOO_TIMEOUT_SECONDS). nics: the network
    interface for kolo's connections between nodes (the first; KOLO_GLOO_IFACE); None: the one each node reaches
    the store through."""
    timeout_s: int = 120
    nics: tuple = ()

    @property
    def backend_cls(self):
        return _KoloBackend


def _join(store):
    import ray.train
    context = ray.train.get_context()
    os.environ.update(store)
    os.environ.update(RANK=str(context.get_world_rank()), WORLD_SIZE=str(context.get_world_size()),
                      LOCAL_RANK=str(context.get_local_rank()), LOCAL_WORLD_SIZE=str(context.get_local_world_size()))


def _leave():
    from kolo import _lifecycle
    _lifecycle.shutdown()


class _KoloBackend(Backend):
    share_cuda_visible_devices = True  # every rank of a node sees the node's GPUs, as under mpirun

    def on_start(self, worker_group, backend_config):
        import ray
        from kolo._abi import _C
        token = secrets.token_hex(16)
        self._store = _C.StoreServer("0.0.0.0", 0, token)
        self._env = {"KOLO_STORE_ADDR": ray.util.get_node_ip_address(), "KOLO_STORE_PORT": str(self._store.port),
                     "KOLO_STORE_TOKEN": token, "KOLO_JOB_ID": "ray-train-" + secrets.token_hex(4),
                     "KOLO_GLOO_TIMEOUT_SECONDS": str(backend_config.timeout_s)}
        if backend_config.nics:
            self._env["KOLO_GLOO_IFACE"] = backend_config.nics[0]

    def on_training_start(self, worker_group, backend_config):
        worker_group.execute(_join, self._env)

    def on_shutdown(self, worker_group, backend_config):
        try:
            worker_group.execute(_leave)
        finally:
            store = getattr(self, "_store", None)
            if store is not None:
                store.stop()
                self._store = None
