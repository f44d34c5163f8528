"""libkolo_ompi_guard.so (src/comm/mpi/ompi_revoke_guard.c), which kolorun --in-place preloads into the ranks:
with it, a process failing while a communicator holding it is being made no longer crashes Open MPI 5.0.11.

shrink_while_peer_dies (tests/system/elastic_in_place/shrink_while_peer_dies.c, no kolo in it) kills one rank of 4, and a
second one at a given moment inside the survivors' shrink or the dups after it. Alone, about 1 run in 6
crashes both survivors (segmentation fault at 0x450 in ompi_comm_revoke_local); with the guard, each of these
runs must end with no crash, and each survivor out of the shrink out of each dup after it.
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from in_place_job import BUILD, GLOO, MPIRUN, ULFM, job_env  # noqa: E402

sys.path.insert(0, str(HERE.parent / "elastic"))
from chaos import CRASH  # noqa: E402

PROGRAM = BUILD / "tests" / "shrink_while_peer_dies"
GUARD = BUILD / "src" / "libkolo_ompi_guard.so"

pytestmark = [pytest.mark.skipif(GLOO, reason="Open MPI's own crash: the Gloo world runs no MPI"),
              pytest.mark.skipif(not PROGRAM.exists() or not GUARD.exists() or not os.path.exists(MPIRUN),
                                 reason="no kolo built against an MPI with ULFM (tests/elastic_in_place.sh builds one)")]

# Microseconds from the second victim's shrink to its death: across the shrink and the dups after it,
# where the runs without the guard crashed.
DELAYS = [0, 200, 500, 1000, 1500, 2000, 2500, 3000, 4000, 5000, 6000, 8000, 10000, 12000]


@pytest.mark.parametrize("delay", DELAYS)
def test_a_process_failing_while_a_communicator_is_made_crashes_no_survivor(delay):
    env = job_env(LD_PRELOAD=str(GUARD), KOLO_DEBUG_OMPI_GUARD="1")
    cmd = [MPIRUN] + ULFM + ["-np", "4", "--oversubscribe", "-x", "LD_PRELOAD", "-x", "KOLO_DEBUG_OMPI_GUARD",
                             str(PROGRAM), str(delay)]
    run = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=60)
    text = run.stdout
    assert not CRASH.search(text), text
    # The guard recognised Open MPI's code on both survivors (else this test would prove nothing).
    assert text.count("kolo: Open MPI revoke guard: armed") >= 2, text
    # Each survivor that came out of the shrink came out of every dup after it. (Now and then Open MPI
    # loses a survivor before the shrink, without a word, guard or not: such a rank is not counted.)
    survivors = [rank for rank in (0, 1) if "rank %d: shrink rc " % rank in text]
    assert survivors, text
    for rank in survivors:
        assert "rank %d: done" % rank in text, text
