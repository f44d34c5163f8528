"""A chaos soak of elastic training by restart (any MPI; here Debian's Open MPI 4.1): one digits job of 4
ranks under kolorun takes random faults at random moments (chaos.py: SIGKILL, SIGSTOP, two kills close
together) and, at a random step, rank 0 dies halfway through writing the host's commit. kolorun restarts
the job after each, from the newest whole commit; it must end with every fault survived, no crash or
abort in any output, no process left behind, and the weights of the one-process reference that follows
the job's schedule. KOLO_CHAOS_SEED=N replays a schedule (the seed is printed).
"""
import os
import random
import subprocess
import sys

import pytest

import chaos
from kolorun_job import BUILD, KOLORUN
from test_elastic import BATCH, COMMIT_EVERY, LR, PROGRAM

pytestmark = pytest.mark.skipif(not (BUILD / "python" / "kolo").exists(), reason="kolo's Python package was not built")

EPOCHS = 24


def soak_by_restart(tmp_path, seed, ranks=4, faults=3, epochs=EPOCHS, step_seconds=0.04, extra_env=None, **options):
    """One soak: (its output, the chaos after it, the job's return code, the weights' path). `extra_env`: more
    variables for every rank; `options`: the Chaos's own (kinds, max_gap, recover_seconds)."""
    commit_step = random.Random(seed).randrange(12, 40)
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:%d\n" % ranks)
    script = tmp_path / "discover.sh"
    script.write_text("#!/bin/sh\ncat %s\n" % hosts)
    script.chmod(0o755)
    out = tmp_path / "weights.pt"
    extra = dict(ELASTIC_TEST_EVENT="0:0:%d:die-in-commit" % commit_step,
                 ELASTIC_TEST_HOSTS_AFTER="localhost:%d" % ranks, ELASTIC_TEST_HOSTS_FILE=str(hosts),
                 ELASTIC_TEST_STEP_SECONDS=str(step_seconds), **(extra_env or {}))
    env = {k: v for k, v in os.environ.items() if k != "KOLO_BUILD_DIR"}  # the suite's, not a kolo setting
    env.update(PYTHONPATH=str(BUILD / "python"), KOLO_ELASTIC_COMMIT_DIR=str(tmp_path), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", KOLO_PEER_TIMEOUT_SECONDS="5", **extra)
    forward = [word for name in sorted(extra) for word in ("-x", name)]
    command = [KOLORUN, "--min-np", "2", "--host-discovery-script", str(script), "--mpi-args", "--oversubscribe",
               *forward, sys.executable, PROGRAM, "--epochs", str(epochs), "--batch-size", str(BATCH),
               "--commit-every", str(COMMIT_EVERY), "--lr", str(LR), "--out", str(out)]
    options.setdefault("recover_seconds", 120)
    with open(tmp_path / "job.log", "w+") as log:
        job = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=env)
        monkey = chaos.Chaos(tmp_path / "job.log", seed, faults, after="dies in its commit", **options)
        try:
            monkey.run(job)
            job.wait(timeout=300)
        except subprocess.TimeoutExpired:
            monkey.error = monkey.error or "the job did not end within 300 s of the last fault"
        finally:
            if job.poll() is None:
                job.kill()
                job.wait()
            log.seek(0)
            text = log.read()
            monkey.end(text)
    return text, monkey, job.returncode, out


def test_a_chaos_soak_by_restart(tmp_path):
    seed = int(os.environ.get("KOLO_CHAOS_SEED", random.randrange(1 << 30)))
    text, monkey, returncode, out = soak_by_restart(tmp_path, seed)
    assert "dies in its commit at " in text, text
    monkey.check(text, returncode, out, EPOCHS)
