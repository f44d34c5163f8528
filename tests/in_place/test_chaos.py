"""A chaos soak of elastic training in place (Open MPI 5's ULFM, kolorun --in-place): one digits job of 5
ranks takes random faults at random moments (tests/elastic/chaos.py: SIGKILL, SIGSTOP) after, at a random
step, whichever rank keeps the host's commit dies halfway through writing it. It must survive every one in
place: training again within a bound after each, no crash or abort in any output, no process left behind,
and the weights of the one-process reference that follows the schedule of sizes the job went through.

The seed is random and printed; KOLO_CHAOS_SEED=N replays a schedule. tools/elastic/chaos_soak.py runs
longer soaks and reports what each fault cost.
"""
import os
import random
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from test_in_place import BUILD, MPIRUN, digits, end_job, job_env, launch  # noqa: E402

sys.path.insert(0, str(HERE.parent / "elastic"))
import chaos  # noqa: E402

pytestmark = pytest.mark.skipif(not (BUILD / "python" / "kolo").exists() or not os.path.exists(MPIRUN),
                                reason="no kolo built against an MPI with ULFM (tests/in_place.sh builds one)")

EPOCHS = 14


def soak_in_place(tmp_path, seed, ranks=5, faults=3, epochs=EPOCHS, step_seconds=0.03, peer_timeout=30, extra_env=None,
                  **options):
    """One soak: (its output, the chaos after it, the job's return code, the weights' path). `extra_env`: more
    variables for every rank; `options`: the Chaos's own (kinds, max_gap, recover_seconds)."""
    commit_step = random.Random(seed).randrange(12, 40)
    env = job_env(PYTHONPATH=str(BUILD / "python"), KOLO_MPIRUN=MPIRUN, KOLO_ELASTIC_COMMIT_DIR=str(tmp_path),
                  KOLO_PEER_TIMEOUT_SECONDS=str(peer_timeout), ELASTIC_TEST_STEP_SECONDS=str(step_seconds),
                  ELASTIC_TEST_EVENT="0:0:%d:die-in-commit" % commit_step, ELASTIC_TEST_HOSTS_AFTER="",
                  ELASTIC_TEST_HOSTS_FILE=str(tmp_path / "hosts"), **(extra_env or {}))
    out = tmp_path / "weights.pt"
    command = digits(out)
    command[command.index("--epochs") + 1] = str(epochs)
    cmd = [str(BUILD / "bin" / "kolorun"), "--in-place", "-np", str(ranks), "--min-np", "1"]
    for name in ("ELASTIC_TEST_EVENT", "ELASTIC_TEST_HOSTS_AFTER", "ELASTIC_TEST_HOSTS_FILE",
                 "ELASTIC_TEST_STEP_SECONDS", *(extra_env or {})):
        cmd += ["-x", name]
    job, log = launch(tmp_path, cmd + command, env)
    monkey = chaos.Chaos(tmp_path / "job.log", seed, faults, after="dies in its commit", **options)
    text = ""
    try:
        monkey.run(job)
        deadline = time.time() + 240
        while job.poll() is None and time.time() < deadline:
            time.sleep(0.2)
        log.seek(0)
        text = log.read()
        if job.poll() is None:
            end_job(job, text)
            monkey.error = monkey.error or "the job did not end within 240 s of the last fault"
    finally:
        log.seek(0)
        monkey.end(log.read())
    return text, monkey, job.returncode, out


def test_a_chaos_soak_in_place(tmp_path):
    # Kills and freezes. A second kill inside a recovery ("double") is left to tools/elastic/chaos_soak.py:
    # about 1 in 8 crash Open MPI 5.0.11 (a failure noticed while a communicator holding that process is
    # being made: ompi_comm_revoke_local on one not yet set up), which kolo cannot prevent; the suite's
    # deterministic test_a_rank_lost_during_the_recovery_is_cut_out_too covers a loss inside a recovery.
    seed = int(os.environ.get("KOLO_CHAOS_SEED", random.randrange(1 << 30)))
    text, monkey, returncode, out = soak_in_place(tmp_path, seed, kinds=("kill", "freeze"))
    assert "dies in its commit at " in text, text
    assert "kolo.elastic: in place: now rank 0 of " in text, text
    assert "restarting" not in text, text
    monkey.check(text, returncode, out, EPOCHS)
