"""pytest under mpirun: every rank runs the same tests in the same order, kolo initialized once.

    kolorun -np 2 python3 -m pytest tests/python        (ctest runs it at 2 and 3 ranks)

Only rank 0 reports progress; other ranks report failures only.
"""
import pytest

import kolo.torch as kolo


def pytest_configure(config):
    kolo.init()
    if kolo.rank() != 0:
        config.option.verbose = -1
        config.option.reportchars = "f"


def pytest_unconfigure(config):
    kolo.shutdown()


@pytest.fixture
def rank():
    return kolo.rank()


@pytest.fixture
def size():
    return kolo.size()
