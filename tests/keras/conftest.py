"""pytest under mpirun for kolo.keras, on the Keras backend KERAS_BACKEND names (jax by default):

    KERAS_BACKEND=jax kolorun -np 2 .venv/bin/python -m pytest tests/keras    (ctest: keras_jax_np2, ...)

Only rank 0 reports progress; other ranks report failures only.
"""
import os

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import pytest  # noqa: E402

import kolo.keras as kolo  # noqa: E402


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
