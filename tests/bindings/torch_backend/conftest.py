"""pytest under mpirun, torch 2.x: every rank runs the same tests in the same order, in one torch.distributed
world on the kolo backend (init_process_group("kolo") with no MASTER_ADDR: kolo tells the ranks where torch's
store is).

    mpirun -np 2 .venv-torch2/bin/python -m pytest tests/bindings/torch_backend     (tests/torch2.sh: 2 and 3 ranks)
"""
import pytest

torch = pytest.importorskip("torch")
if int(torch.__version__.split(".")[0]) < 2:
    pytest.skip("the kolo backend needs torch 2.x (tests/torch2.sh runs this suite)", allow_module_level=True)

import torch.distributed as dist  # noqa: E402

import kolo.torch  # noqa: E402,F401 (registers the backend)


def pytest_configure(config):
    dist.init_process_group("kolo")
    if dist.get_rank() != 0:
        config.option.verbose = -1
        config.option.reportchars = "f"


def pytest_unconfigure(config):
    dist.destroy_process_group()
    kolo.torch.shutdown()


@pytest.fixture
def rank():
    return dist.get_rank()


@pytest.fixture
def size():
    return dist.get_world_size()
