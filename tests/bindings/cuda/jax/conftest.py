"""kolo.jax inside jit on CUDA arrays, under mpirun (ctest jax_cuda_np2, label gpu).

Each rank uses GPU local_rank % GPUs; where ranks outnumber GPUs each claims a host of its own for
NCCL (NCCL_HOSTID). JAX does not preallocate GPU memory here, so that ranks can share a GPU.
Without a GPU every test skips.
"""
import os

os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")

import jax  # noqa: E402
import pytest  # noqa: E402

import kolo.jax as kolo  # noqa: E402


def gpus():
    try:
        return jax.devices("cuda")
    except RuntimeError:
        return []


def pytest_configure(config):
    if not gpus():
        return
    local_rank = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
    local_size = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))
    if local_size > len(gpus()) and "NCCL_HOSTID" not in os.environ:
        os.environ["NCCL_HOSTID"] = "kolo-test-%s" % os.environ.get("OMPI_COMM_WORLD_RANK", "0")
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    jax.config.update("jax_default_device", gpus()[local_rank % len(gpus())])
    kolo.init()
    if kolo.rank() != 0:
        config.option.verbose = -1
        config.option.reportchars = "f"


def pytest_unconfigure(config):
    if gpus():
        kolo.shutdown()


def pytest_collection_modifyitems(config, items):
    if not gpus():
        for item in items:
            item.add_marker(pytest.mark.skip(reason="no GPU usable by jax here"))
