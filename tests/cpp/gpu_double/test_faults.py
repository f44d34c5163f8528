"""A peer that dies while GPU collectives are in flight (the host double) ends the job on every
rank, naming it, instead of leaving the others waiting.

Run by ctest (KOLO_BUILD_DIR set), or: KOLO_BUILD_DIR=build python3 -m pytest tests/cpp/gpu_double
"""
import os
import re
import subprocess
import time
from pathlib import Path

BUILD = Path(os.environ.get("KOLO_BUILD_DIR", "build")).resolve()


def test_a_peer_killed_mid_collective_ends_every_rank_naming_it():
    env = dict(os.environ, KOLO_TEST_DIE_RANK="1")
    start = time.monotonic()
    job = subprocess.run(["mpirun", "-np", "3", "--oversubscribe", "-x", "KOLO_TEST_DIE_RANK",
                          str(BUILD / "tests" / "kolo_gpu_double_tests"), "--gtest_filter=GpuFaults.*"],
                         capture_output=True, text=True, timeout=120, env=env)
    elapsed = time.monotonic() - start
    assert job.returncode != 0
    assert elapsed < 60, "the job took %.0f s to end after a rank died" % elapsed
    assert re.search(r"process rank 1 with PID \d+ on node \S+ exited on signal 9 \(Killed\)", job.stderr), \
        job.stdout[-3000:] + job.stderr[-3000:]
