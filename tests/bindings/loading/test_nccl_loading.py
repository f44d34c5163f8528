"""kolo never breaks the framework it is imported with, in either import order: libkolo links no NCCL
(a process has one libnccl.so.2, and PyPI's torch needs its own, newer one) and loads one at its first
GPU op, the process's own where one is loaded already. Each case runs in a fresh interpreter, since the
order of imports is what it tests.

    KOLO_LOADING_PYTHON=venv/bin/python PYTHONPATH=build/python python3 -m pytest tests/bindings/loading

KOLO_LOADING_PYTHON: the interpreter whose torch is tested (default: this one). .ci/run runs it with
Debian's torch and with today's torch from PyPI.
"""
import json
import os
import subprocess
import sys

import pytest

PYTHON = os.environ.get("KOLO_LOADING_PYTHON", sys.executable)

# What a script does after its imports: torch's own use of its CUDA libraries, then what kolo loaded.
REPORT = """
import json, importlib.util
import torch
import torch.distributed
report = {"torch": torch.__version__, "cuda_available": torch.cuda.is_available(),
          "nccl_available": torch.distributed.is_nccl_available(),
          "torch_nccl_wheel": importlib.util.find_spec("nvidia") is not None and
                              importlib.util.find_spec("nvidia.nccl") is not None,
          "kolo_nccl": kolo.nccl_runtime(), "kolo_cuda": "[X] CUDA" in kolo.build_summary()}
print("REPORT " + json.dumps(report))
"""


def run(first, second):
    code = "import %s\nimport %s\nimport kolo\n%s" % (first, second, REPORT)
    job = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=120)
    assert job.returncode == 0, "import %s, then %s, failed:\n%s" % (first, second, job.stderr[-3000:])
    line = [l for l in job.stdout.splitlines() if l.startswith("REPORT ")]
    assert line, job.stdout + job.stderr
    return json.loads(line[-1][len("REPORT "):])


@pytest.fixture(scope="module", autouse=True)
def has_torch():
    if subprocess.run([PYTHON, "-c", "import torch"], capture_output=True).returncode != 0:
        pytest.skip("%s has no torch" % PYTHON)


@pytest.mark.parametrize("first,second", [("kolo.torch", "torch"), ("torch", "kolo.torch")],
                         ids=["kolo_first", "torch_first"])
def test_either_import_order_keeps_torch_whole(first, second):
    r = run(first, second)
    if not r["kolo_cuda"]:
        assert r["kolo_nccl"] == "", r  # no NCCL in a kolo built without CUDA
        return
    if r["torch_nccl_wheel"]:
        # torch loaded its own NCCL at import; kolo's GPU ops use that one, whichever came first.
        assert "nvidia/nccl" in r["kolo_nccl"] and "already loaded" in r["kolo_nccl"], r
    else:
        # A torch without NCCL of its own (Debian's, CPU-only): kolo's comes from where it was built.
        assert r["kolo_nccl"].startswith("2.") and "already loaded" not in r["kolo_nccl"], r


def test_kolo_says_which_nccl_it_would_load_without_a_framework():
    code = "import kolo\nprint(kolo.nccl_runtime())"
    job = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, timeout=60)
    assert job.returncode == 0, job.stderr
    said = job.stdout.strip()
    summary = subprocess.run([PYTHON, "-c", "import kolo\nprint(kolo.build_summary())"], capture_output=True, text=True,
                             timeout=60).stdout
    if "[X] CUDA" not in summary:
        assert said == ""
        return
    # Nothing loaded it before: the one kolo was built against (or the loader's), named with its version.
    assert said.startswith("2.") and ("built against" in said or "search path" in said), said
