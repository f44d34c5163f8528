"""pytest under mpirun for kolo.tensorflow: every rank runs the same tests in the same order, kolo
initialized once.

    kolorun -np 2 .venv/bin/python -m pytest tests/bindings/tensorflow     (ctest: tensorflow_np2, tensorflow_np3)

Only rank 0 reports progress; other ranks report failures only (tests/bindings/suite_under_mpirun.py).
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("KERAS_BACKEND", "tensorflow")  # kolo.tensorflow's Keras pieces

import pytest  # noqa: E402

tf = pytest.importorskip("tensorflow", reason="kolo.tensorflow needs TensorFlow (pip install tensorflow-cpu)")
import kolo.tensorflow as kolo  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from suite_under_mpirun import install  # noqa: E402

install(globals(), kolo)
