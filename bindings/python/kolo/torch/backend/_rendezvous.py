"""env:// where torch's store has no address: under mpirun, srun or kolorun (MPI or Gloo world) a script calls
init_process_group() with no MASTER_ADDR or MASTER_PORT, which kolo does not need to start. There kolo starts
first, rank 0 serves torch's store on a free port, and kolo tells every rank where. Anywhere else (torchrun, a
given MASTER_ADDR) torch's own env:// runs unchanged."""
import importlib
import os
import socket

from kolo import _lifecycle
from kolo._abi import _C

_STARTED_BY = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "KOLO_STORE_ADDR")


def _kolo_starts_alone(environ):
    return "MASTER_ADDR" not in environ and any(n in environ for n in _STARTED_BY)


def _reachable_address():
    """An address of this host the others can reach: localhost where the job is on this host alone."""
    if _C.local_size() == _C.size():
        return "127.0.0.1"
    probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        probe.connect(("192.0.2.1", 9))  # no packet leaves: this only asks the routing table
        return probe.getsockname()[0]
    except OSError:
        return socket.gethostname()
    finally:
        probe.close()


def store_through_kolo(timeout):
    import torch.distributed as dist
    from kolo.torch.functions import broadcast_object
    if not _lifecycle.is_initialized():
        _lifecycle.init()
    rank, size = _C.rank(), _C.size()
    store = None
    if rank == 0:
        address = _reachable_address()
        store = dist.TCPStore(address, 0, size, True, timeout, wait_for_workers=False)
        where = (address, store.port)
    else:
        where = None
    address, port = broadcast_object(where, root_rank=0, name="kolo.torch.backend.store")
    if store is None:
        store = dist.TCPStore(address, port, size, False, timeout)
    # Later code (torch's own and the script's) reads these as under torchrun.
    os.environ.setdefault("MASTER_ADDR", address)
    os.environ.setdefault("MASTER_PORT", str(port))
    return store, rank, size


def wrap_env_handler():
    """Puts the handler above in front of torch's env://, once."""
    try:  # the module: torch.distributed.rendezvous, as an attribute, is its function
        handlers = importlib.import_module("torch.distributed.rendezvous")._rendezvous_handlers
    except (ImportError, AttributeError):  # a torch without the table: MASTER_ADDR and MASTER_PORT are needed
        return
    original = handlers.get("env")
    if original is None or getattr(original, "_kolo", False):
        return

    def env_handler(url, timeout=None, **kwargs):
        if not _kolo_starts_alone(os.environ):
            if timeout is None:
                yield from original(url, **kwargs)
            else:
                yield from original(url, timeout=timeout, **kwargs)
            return
        from datetime import timedelta
        yield store_through_kolo(timeout or timedelta(minutes=30))
        raise RuntimeError("Unable to perform re-rendezvous using env:// method")

    env_handler._kolo = True
    handlers["env"] = env_handler
