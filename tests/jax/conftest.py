"""pytest under mpirun for kolo.jax and kolo.keras: every rank runs the same tests in the same
order, kolo initialized once.

    KERAS_BACKEND=jax kolorun -np 2 .venv/bin/python -m pytest tests/jax     (ctest: jax_np2, jax_np3)

Only rank 0 reports progress; other ranks report failures only.
"""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import pytest  # noqa: E402

import kolo.jax as kolo  # noqa: E402


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
