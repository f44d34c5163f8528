"""A chaos soak of elastic training in place (Open MPI 5's ULFM, kolorun --in-place): one digits job of 7
ranks takes random faults at random moments (tests/system/elastic/chaos.py: SIGKILL, SIGSTOP, a second SIGKILL inside
the recovery) after, at a random step, whichever rank keeps the host's commit dies halfway through writing
it. It must survive every one in place: training again within a bound after each, no crash or abort in any
output, no process left behind, and the weights of the one-process reference that follows the schedule of
sizes the job went through.

The seed is random and printed; KOLO_CHAOS_SEED=N replays a schedule. tools/elastic/chaos_soak.py runs
longer soaks and reports what each fault cost.
"""
import os
import random
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from in_place_job import BUILD, MPIRUN, NEEDS_ULFM_BUILD, WORLD_FLAGS, digits, end_job, job_env, launch  # noqa: E402

sys.path.insert(0, str(HERE.parent / "elastic"))
import chaos  # noqa: E402

pytestmark = NEEDS_ULFM_BUILD

EPOCHS = 14


class JobInCluster:
    """The job kolorun runs inside tests/system/cluster/cluster.sh, seen as a Popen: it has ended once the command
    printed its status, though cluster.sh keeps the emulated hosts up until `release()`, so that what is
    left on them can be seen first."""

    def __init__(self, cluster, log, done):
        self.cluster, self.log, self.done = cluster, log, done
        self.returncode = None

    def poll(self):
        if self.returncode is None:
            self.log.seek(0)
            said = re.search(r"^soak: job status (\d+)$", self.log.read(), re.M)
            if said:
                self.returncode = int(said.group(1))
            elif self.cluster.poll() is not None:
                self.returncode = self.cluster.returncode
        return self.returncode

    def release(self):
        self.done.touch()
        try:
            self.cluster.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.cluster.kill()


def soak_in_place(tmp_path, seed, ranks=5, faults=3, epochs=EPOCHS, step_seconds=0.03, peer_timeout=30, extra_env=None,
                  hosts=0, **options):
    """One soak: (its output, the chaos after it, the job's return code, the weights' path). `extra_env`: more
    variables for every rank; `hosts`: that many emulated hosts, `ranks` spread over them (kolo's peer
    watch at 3 s, --min-np 2, so that a host cut off alone ends its side); `options`: the Chaos's own
    (kinds, max_gap, recover_seconds)."""
    commit_step = random.Random(seed).randrange(12, 40)
    env = job_env(PYTHONPATH=str(BUILD / "python"), KOLO_MPIRUN=MPIRUN, KOLO_ELASTIC_COMMIT_DIR=str(tmp_path),
                  KOLO_PEER_TIMEOUT_SECONDS=str(3 if hosts else peer_timeout),
                  ELASTIC_TEST_STEP_SECONDS=str(step_seconds),
                  ELASTIC_TEST_EVENT="0:0:%d:die-in-commit" % commit_step, ELASTIC_TEST_HOSTS_AFTER="",
                  ELASTIC_TEST_HOSTS_FILE=str(tmp_path / "hosts"), **(extra_env or {}))
    out = tmp_path / "weights.pt"
    command = digits(out)
    command[command.index("--epochs") + 1] = str(epochs)
    cmd = [str(BUILD / "bin" / "kolorun")] + WORLD_FLAGS + ["--in-place", "-np", str(ranks), "--min-np",
                                                            "2" if hosts else "1"]
    for name in ("ELASTIC_TEST_EVENT", "ELASTIC_TEST_HOSTS_AFTER", "ELASTIC_TEST_HOSTS_FILE",
                 "ELASTIC_TEST_STEP_SECONDS", *(extra_env or {})):
        cmd += ["-x", name]
    if hosts:
        done = tmp_path / "released"
        slots = ranks // hosts
        inner = ('H=$(echo $CLUSTER_HOSTS | sed "s/,/:%d,/g"):%d; %s -H $H --rsh-agent $CLUSTER_AGENT '
                 '--network-interface $CLUSTER_SUBNET %s; echo "soak: job status $?"; '
                 'while [ ! -e %s ]; do sleep 0.2; done'
                 % (slots, slots, " ".join(cmd), " ".join(command), done))
        cluster, log = launch(tmp_path, ["sh", str(HERE.parent / "cluster" / "cluster.sh"), "--hosts", str(hosts),
                                         "--", "sh", "-c", inner], env)
        job = JobInCluster(cluster, log, done)
    else:
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
            end_job(job.cluster if hosts else job, text)
            monkey.error = monkey.error or "the job did not end within 240 s of the last fault"
    finally:
        log.seek(0)
        monkey.end(log.read())
        if hosts:
            job.release()
    return text, monkey, job.returncode, out


def test_a_chaos_soak_in_place(tmp_path):
    # Kills, freezes and a second kill inside a recovery ("double"), which Open MPI 5.0.11 alone crashes on
    # about 1 time in 6 and kolorun's preloaded guard keeps from crashing (test_ompi_guard.py).
    seed = int(os.environ.get("KOLO_CHAOS_SEED", random.randrange(1 << 30)))
    # 7 ranks: room for the commit's death and three faults, doubles or not, down to one rank. Steps of at
    # least 50 ms, so that the job outlasts three faults at their widest gaps (at 30 ms, since kolo's shared
    # memory sped its collectives up, a job could end before the third).
    text, monkey, returncode, out = soak_in_place(tmp_path, seed, ranks=7, step_seconds=0.05,
                                                  kinds=("kill", "freeze", "double"))
    assert "dies in its commit at " in text, text
    assert "kolo.elastic: in place: now rank 0 of " in text, text
    assert "restarting" not in text, text
    monkey.check(text, returncode, out, EPOCHS)

