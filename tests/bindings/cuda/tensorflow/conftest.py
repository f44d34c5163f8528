"""kolo.tensorflow's kernels on GPU tensors, under mpirun (ctest tensorflow_cuda_np2, label gpu).

Each rank sees GPU local_rank % GPUs, grown on demand so that ranks can share a GPU; where ranks
outnumber GPUs each claims a host of its own for NCCL (NCCL_HOSTID). Without a GPU every test skips.
"""
import os

import pytest
import tensorflow as tf

import kolo.tensorflow as kolo

GPUS = tf.config.list_physical_devices("GPU")


def pytest_configure(config):
    if not GPUS:
        return
    local_rank = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
    local_size = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))
    if local_size > len(GPUS) and "NCCL_HOSTID" not in os.environ:
        os.environ["NCCL_HOSTID"] = "kolo-test-%s" % os.environ.get("OMPI_COMM_WORLD_RANK", "0")
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    mine = GPUS[local_rank % len(GPUS)]
    tf.config.set_visible_devices([mine], "GPU")
    tf.config.experimental.set_memory_growth(mine, True)
    kolo.init()
    if kolo.rank() != 0:
        config.option.verbose = -1
        config.option.reportchars = "f"


def pytest_unconfigure(config):
    if GPUS:
        kolo.shutdown()


def pytest_collection_modifyitems(config, items):
    if not GPUS:
        for item in items:
            item.add_marker(pytest.mark.skip(reason="no GPU usable by tensorflow here"))
