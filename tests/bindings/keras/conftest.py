"""pytest under mpirun for kolo.keras, on the Keras backend KERAS_BACKEND names (jax by default):

    KERAS_BACKEND=jax kolorun -np 2 .venv/bin/python -m pytest tests/bindings/keras    (ctest: keras_jax_np2, ...)

Only rank 0 reports progress; other ranks report failures only (tests/bindings/suite_under_mpirun.py).
"""
import os
import sys
from pathlib import Path

os.environ.setdefault("KERAS_BACKEND", "jax")
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import kolo.keras as kolo  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from suite_under_mpirun import install  # noqa: E402

install(globals(), kolo)
