"""kolo.jax.elastic on the restart path (any MPI): the in-place suite's JAX loop (tests/system/elastic_in_place/jax_in_place.py)
under kolorun in elastic mode.

Rank 2 of 3 takes its slot out of the discovery script's list and SIGKILLs itself before step 10; kolorun
starts the workers again, new processes, on the 2 slots left; they resume from the commit of step 8 kept
in memory and end with plain gradient descent's weights to 1e-12 (each rank takes an equal share of every
batch): nothing committed lost, nothing done twice.

The workers run with the Python that has jax (KOLO_JAX_PYTHON, by default .venv/bin/python); pytest and
kolorun with any. Run by ctest (elastic_restart), or:
KOLO_BUILD_DIR=build python3 -m pytest tests/system/elastic/test_jax_restart.py
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from kolorun_job import BUILD, run_elastic_job

IN_PLACE = Path(__file__).resolve().parents[1] / "elastic_in_place"
sys.path.insert(0, str(IN_PLACE))
from least_squares import plain_gradient_descent  # noqa: E402

PYTHON = os.environ.get("KOLO_JAX_PYTHON") or str(Path(__file__).resolve().parents[3] / ".venv" / "bin" / "python")
FFI = BUILD / "python" / "kolo" / "jax" / "libkolo_xla_ffi.so"
STEPS = 30


def has_jax():
    return os.path.exists(PYTHON) and subprocess.run([PYTHON, "-c", "import jax"], capture_output=True).returncode == 0


pytestmark = [pytest.mark.skipif(not has_jax(), reason="%s has no jax (set KOLO_JAX_PYTHON to one with it)" % PYTHON),
              pytest.mark.skipif(not FFI.exists(), reason="kolo.jax's XLA FFI library was not built (%s)" % FFI)]


def test_a_jax_loop_resumes_from_the_last_commit_in_new_processes(tmp_path):
    out = tmp_path / "w.npy"
    job = run_elastic_job(tmp_path, "localhost:3", [PYTHON, str(IN_PLACE / "jax_in_place.py"), "--steps", str(STEPS),
                                                    "--kill-at", "10", "--out", str(out)],
                          dict(ELASTIC_TEST_HOSTS_AFTER="localhost:2", JAX_PLATFORMS="cpu"), timeout=120)
    text = job.stdout + job.stderr
    assert job.returncode == 0, text
    # Commits at steps 4 and 8 (commits 0 and 1): steps 8 and 9 are done again on 2 ranks.
    assert "restarting from the last commit" in text and "attempt 1 on 2 ranks resumes from commit 1" in text, text
    # Not anchored to lines: mpirun may forward two ranks' lines as one.
    lines = re.findall(r"rank (\d+) of (\d+) (starts|ends) with pid (\d+)", text)
    first = {pid for _, size, word, pid in lines if word == "starts" and size == "3"}
    again = {pid for _, size, word, pid in lines if word == "starts" and size == "2"}
    ended = {pid for _, size, word, pid in lines if word == "ends"}
    # The restart path: 3 processes, then 2 new ones, which end the job (in place, the first 2 would).
    assert len(first) == 3 and len(again) == 2 and ended == again and not first & again, text
    assert "ranks 2  steps %d" % STEPS in job.stdout, text
    np.testing.assert_allclose(np.load(out), plain_gradient_descent(STEPS), rtol=0, atol=1e-12)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("kolo-elastic-")]  # the commits went at the end
