"""pytest under mpirun: every rank runs the same tests in the same order, kolo initialized once.

    kolorun -np 2 python3 -m pytest tests/bindings/torch        (ctest runs it at 2 and 3 ranks)

Only rank 0 reports progress; other ranks report failures only (tests/bindings/suite_under_mpirun.py).
"""
import sys
from pathlib import Path

import kolo.torch as kolo

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from suite_under_mpirun import install  # noqa: E402

install(globals(), kolo)
