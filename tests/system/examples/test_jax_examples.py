"""The JAX and Keras examples end to end: on 2 ranks through kolorun they train as the same
script does in one process (dropout masks and rounding differ, so to a point, not bit for bit).

Run by ctest (jax_examples, with the Python that has jax), or:
    KOLO_BUILD_DIR=build .venv/bin/python -m pytest tests/system/examples
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

BUILD = Path(os.environ.get("KOLO_BUILD_DIR", "build")).resolve()
EXAMPLES = Path(__file__).resolve().parents[3] / "examples"
ENV = dict(os.environ, PYTHONPATH=str(BUILD / "python"), KERAS_BACKEND="jax", JAX_PLATFORMS="cpu")


def run(*command):
    job = subprocess.run(list(command), capture_output=True, text=True, timeout=300, env=ENV)
    assert job.returncode == 0, job.stderr[-3000:]
    return job.stdout


def accuracies(output):
    # "epoch 15  loss 0.0584  test accuracy 97.8%" (jax) or "... - val_accuracy: 0.9861 - ..." (keras)
    found = [float(a) / 100 for a in re.findall(r"test accuracy ([0-9.]+)%", output)]
    return found or [float(a) for a in re.findall(r"val_accuracy: ([0-9.]+)", output)]


@pytest.mark.parametrize("example", ["jax/digits_kolo.py", "keras/digits_kolo.py"])
def test_two_ranks_train_like_one_process(example):
    script = str(EXAMPLES / example)
    single = accuracies(run(sys.executable, script))
    double = accuracies(run(str(BUILD / "bin" / "kolorun"), "-np", "2", sys.executable, script))
    assert len(single) == len(double) == 15  # one line per epoch, printed by rank 0 only
    assert double[-1] >= 0.95
    assert abs(double[-1] - single[-1]) <= 0.02
