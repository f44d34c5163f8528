"""What each binding's pytest suite under mpirun shares (the conftest.py of tests/bindings/torch, tests/bindings/jax,
tests/bindings/keras and tests/bindings/tensorflow): every rank runs the same tests in the same order, kolo initialized
once per process; only rank 0 reports progress, the other ranks failures only; `rank` and `size` fixtures."""
import pytest


def install(conftest_globals, kolo):
    """Puts the hooks and fixtures into a conftest's namespace (its globals()), for the binding `kolo`."""

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

    conftest_globals.update(pytest_configure=pytest_configure, pytest_unconfigure=pytest_unconfigure, rank=rank,
                            size=size)
