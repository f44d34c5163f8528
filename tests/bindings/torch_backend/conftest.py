"""pytest under mpirun, torch 2.x: every rank runs the same tests in the same order, in one torch.distributed
world on the kolo backend (init_process_group("kolo") with no MASTER_ADDR: kolo tells the ranks where torch's
store is).

    mpirun -np 2 .venv-torch2/bin/python -m pytest tests/bindings/torch_backend     (tests/torch2.sh: 2 and 3 ranks)

KOLO_TEST_DEVICE=cuda runs the same tests on CUDA tensors (ctest torch_backend_cuda_np2, label gpu): each rank pins
its GPU (tests/bindings/cuda/torch_gpu_rank.py) and makes CUDA torch's default device, so every tensor the tests
make is a CUDA tensor. Without a GPU every test skips, saying why.
"""
import os
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
if int(torch.__version__.split(".")[0]) < 2:
    pytest.skip("the kolo backend needs torch 2.x (tests/torch2.sh runs this suite)", allow_module_level=True)

import torch.distributed as dist  # noqa: E402

import kolo.torch  # noqa: E402,F401 (registers the backend)

ON_CUDA = os.environ.get("KOLO_TEST_DEVICE", "cpu") == "cuda"
NO_GPU = ON_CUDA and not torch.cuda.is_available()


def pytest_configure(config):
    if NO_GPU:
        return
    if ON_CUDA:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cuda"))
        from torch_gpu_rank import pin_gpu
        pin_gpu()
        torch.set_default_device("cuda")
    dist.init_process_group("kolo")
    if dist.get_rank() != 0:
        config.option.verbose = -1
        config.option.reportchars = "f"


def pytest_unconfigure(config):
    if NO_GPU:
        return
    dist.destroy_process_group()
    kolo.torch.shutdown()


def pytest_collection_modifyitems(config, items):
    if NO_GPU:
        skip = pytest.mark.skip(reason="KOLO_TEST_DEVICE=cuda, and no GPU usable by torch here")
        for item in items:
            item.add_marker(skip)


@pytest.fixture
def rank():
    return dist.get_rank()


@pytest.fixture
def size():
    return dist.get_world_size()
