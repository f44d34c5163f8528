"""kolo.torch on CUDA tensors, under mpirun (ctest torch_cuda_np2, label gpu; tools/gpu/run_gpu_suite.sh).

Each rank pins GPU local_rank % GPUs; where ranks outnumber GPUs each claims a host of its own for
NCCL (NCCL_HOSTID), which NCCL then connects through sockets. Without a GPU every test skips.
"""
import os

import pytest
import torch

import kolo.torch as kolo


def pytest_configure(config):
    if not torch.cuda.is_available():
        return
    local_rank = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
    local_size = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))
    if local_size > torch.cuda.device_count() and "NCCL_HOSTID" not in os.environ:
        os.environ["NCCL_HOSTID"] = "kolo-test-%s" % os.environ.get("OMPI_COMM_WORLD_RANK", "0")
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    torch.cuda.set_device(local_rank % torch.cuda.device_count())
    kolo.init()
    if kolo.rank() != 0:
        config.option.verbose = -1
        config.option.reportchars = "f"


def pytest_unconfigure(config):
    if torch.cuda.is_available():
        kolo.shutdown()


def pytest_collection_modifyitems(config, items):
    if not torch.cuda.is_available():
        skip = pytest.mark.skip(reason="no GPU usable by torch here")
        for item in items:
            item.add_marker(skip)
