"""PyTorch's own distributed suite (torch.testing._internal.distributed.distributed_test, the tests upstream's
test/distributed/test_distributed_spawn.py runs for Gloo) with BACKEND=kolo, or BACKEND=gloo to compare. Not a
test_*.py: CI's run of tests/system/torch_backend does not collect it; run it by hand (benchmarks/README.md,
"PyTorch's distributed suite on the kolo backend"):

    BACKEND=kolo WORLD_SIZE=2 PYTHONPATH=build/python DISTRIBUTED_TESTS_DEFAULT_TIMEOUT=120 \\
        python -m pytest -p no:cacheprovider -rfEs tests/system/torch_backend/pytorch_suite.py

with `python` the environment of tests/torch2.sh (.venv-torch2) and `pip install expecttest hypothesis` there
(torch's test helpers import them; CI's environment has neither, as it does not run this).

As upstream's driver: one test class of TestDistBackend and DistributedTest._DistTestBase, each test starting
WORLD_SIZE fresh processes that meet through a file:// store (TestDistBackend._run). What differs, for kolo only
where it says so:

- The ranks are forked from pytest (KOLO_SUITE_START=spawn spawns them, as upstream): a spawned rank imports
  torch and the suite again, about 10 s a test on a 2-core machine, for 285 tests. No GPU is used here.
- Each rank gets RANK, and the parent a free MASTER_PORT per test (MASTER_ADDR is the suite's): kolo
  forms its own world from a launcher's variables (as under torchrun), not from torch's file:// store. Gloo
  ignores them.
- KOLO_SUITE_AS_GLOO=1 (the shim; kolo only): kolo is admitted where Gloo is. "kolo" joins Gloo's rows of the
  suite's feature tables (DistTestCases.backend_feature "ddp", "subgroup", "gpu", "cuda", "plugin"), read by the
  decorators and inside tests; and each test is marked skipped, or not, as the suite marks it for Gloo (the
  decorators that name "gloo": require_backend_is_available({"gloo"}), BACKEND != "gloo"). A test's body is
  unchanged, and so are torch's files: a test that asks BACKEND inside takes its non-Gloo path.
"""
import importlib.util
import os
import socket
import tempfile

BACKEND = os.environ.setdefault("BACKEND", "kolo")
os.environ.setdefault("WORLD_SIZE", "2")
if "TEMP_DIR" not in os.environ:  # upstream's driver insists on it; setUp makes each test's own
    os.environ["TEMP_DIR"] = tempfile.mkdtemp(prefix="pytorch_suite_")
    os.makedirs(os.path.join(os.environ["TEMP_DIR"], "barrier"), exist_ok=True)

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

if BACKEND == "kolo":
    import kolo.torch  # noqa: E402,F401  registers the backend (in every spawned rank too: it imports this module)

from torch.testing._internal.common_distributed import DistTestCases  # noqa: E402

AS_GLOO = BACKEND == "kolo" and os.environ.get("KOLO_SUITE_AS_GLOO") == "1"
if AS_GLOO:
    # Before distributed_test is imported: its decorators read the tables when the class is made.
    for feature in ("ddp", "subgroup", "gpu", "cuda", "plugin"):
        DistTestCases.backend_feature[feature].add("kolo")

from torch.testing._internal.common_utils import run_tests  # noqa: E402
from torch.testing._internal.distributed.distributed_test import DistributedTest, TestDistBackend  # noqa: E402


def _skips_as_for_gloo():
    """Each test's skip marker as the suite gives it for BACKEND=gloo: a second copy of distributed_test, read
    with BACKEND=gloo (its decorators mark a test skipped, or not, as the module is read)."""
    spec = importlib.util.find_spec("torch.testing._internal.distributed.distributed_test")
    os.environ["BACKEND"] = "gloo"
    try:
        as_gloo = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(as_gloo)
    finally:
        os.environ["BACKEND"] = BACKEND
    return vars(as_gloo.DistributedTest._DistTestBase)


if AS_GLOO:
    for name, gloo_test in _skips_as_for_gloo().items():
        test = vars(DistributedTest._DistTestBase).get(name)
        if name.startswith("test_") and test is not None:
            test.__unittest_skip__ = getattr(gloo_test, "__unittest_skip__", False)
            test.__unittest_skip_why__ = getattr(gloo_test, "__unittest_skip_why__", "")

torch.backends.cuda.matmul.allow_tf32 = False
START = os.environ.get("KOLO_SUITE_START", "fork")


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TestDistBackendWithSpawn(TestDistBackend, DistributedTest._DistTestBase):
    def setUp(self):
        super().setUp()
        os.environ["MASTER_PORT"] = str(_free_port())  # the ranks inherit it
        if START == "spawn":
            self._spawn_processes()
        else:
            self._start_processes(torch.multiprocessing.get_context("fork").Process)
        torch.backends.cudnn.flags(enabled=True, allow_tf32=False).__enter__()

    @classmethod
    def _run(cls, rank, test_name, file_name, pipe, **kwargs):
        os.environ["RANK"] = os.environ["LOCAL_RANK"] = str(rank)
        os.environ["LOCAL_WORLD_SIZE"] = os.environ["WORLD_SIZE"]
        super()._run(rank, test_name, file_name, pipe, **kwargs)


TestDistBackendWithSpawn.__name__ = TestDistBackendWithSpawn.__qualname__ = "TestDistBackendWithSpawn%s%s" % (
    BACKEND.upper(), "AsGloo" if AS_GLOO else "")
globals()[TestDistBackendWithSpawn.__name__] = TestDistBackendWithSpawn
del TestDistBackendWithSpawn

if __name__ == "__main__":
    assert dist.is_available()
    run_tests()
