"""The TensorFlow example end to end: on 2 ranks through kolorun it trains as the same script does in
one process (to a point: each rank shuffles its own shard).

Run by ctest (tensorflow_example, with the Python that has TensorFlow), or:
    KOLO_BUILD_DIR=build .venv/bin/python -m pytest tests/system/examples/test_tensorflow_example.py
"""
import os
import re
import subprocess
import sys
from pathlib import Path

BUILD = Path(os.environ.get("KOLO_BUILD_DIR", "build")).resolve()
SCRIPT = str(Path(__file__).resolve().parents[3] / "examples" / "tensorflow" / "digits_kolo.py")
ENV = dict(os.environ, PYTHONPATH=str(BUILD / "python"), KERAS_BACKEND="tensorflow", TF_CPP_MIN_LOG_LEVEL="2")


def accuracies(*command):
    job = subprocess.run(list(command), capture_output=True, text=True, timeout=300, env=ENV)
    assert job.returncode == 0, job.stderr[-3000:]
    return [float(a) / 100 for a in re.findall(r"test accuracy ([0-9.]+)%", job.stdout)]


def test_two_ranks_train_like_one_process():
    single = accuracies(sys.executable, SCRIPT)
    double = accuracies(str(BUILD / "bin" / "kolorun"), "-np", "2", sys.executable, SCRIPT)
    assert len(single) == len(double) == 15  # one line per epoch, printed by rank 0 only
    assert double[-1] >= 0.95 and abs(double[-1] - single[-1]) <= 0.02
