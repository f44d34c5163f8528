"""Ray Train runs an unchanged DDP loop on the kolo backend (TorchConfig(backend="kolo")) to one process's
weights. Needs a Python with ray[train] and torch 2.x (CI: tests/torch2.sh):

    PYTHONPATH=build/python <ray venv>/bin/python -m pytest tests/system/ray
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray.train", reason="Ray Train is not installed in this Python (%s)" % sys.executable)
torch = pytest.importorskip("torch")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "torch_backend"))
from ddp_training import one_process_weights  # noqa: E402


def test_torch_trainer_with_backend_kolo_trains_to_one_process_weights():
    job = subprocess.run([sys.executable, str(HERE / "train_on_kolo.py")], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ, RAY_TRAIN_V2_ENABLED="1"))
    text = job.stdout + job.stderr
    assert job.returncode == 0, text[-4000:]
    sums = re.findall(r"worker (\d) of 2 on kolo: weights sum (\S+)", text)
    assert sorted({r for r, _ in sums}) == ["0", "1"], text[-4000:]  # Ray may echo a line twice
    expected = float(sum(p.sum() for p in one_process_weights()))
    for _, total in sums:
        assert float(total) == pytest.approx(expected, rel=0, abs=1e-12)
