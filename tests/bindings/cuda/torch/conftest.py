"""kolo.torch on CUDA tensors, under mpirun (ctest torch_cuda_np2, label gpu; tools/gpu/run_gpu_suite.sh).

Each rank pins its GPU (../torch_gpu_rank.py). Without a GPU every test skips.
"""
import sys
from pathlib import Path

import pytest
import torch

import kolo.torch as kolo

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from torch_gpu_rank import pin_gpu  # noqa: E402


def pytest_configure(config):
    if not torch.cuda.is_available():
        return
    pin_gpu()
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
