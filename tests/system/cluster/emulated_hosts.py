"""A test's command on emulated hosts (cluster.sh), torn down whatever ends it.

subprocess.run's timeout kills with SIGKILL, which cluster.sh cannot trap: the hosts' namespaces, their /etc/hosts
lines, their tmpfs and every process on them (ranks, Slurm's and Ray's daemons) outlived the test, and took the
machine's cores from the tests after it. Here a timeout, or anything that interrupts the test (pytest-timeout,
Ctrl-C), sends SIGTERM to the whole run first, on which cluster.sh (and slurm.sh or ray_cluster.sh inside it) tear
down what they started; SIGKILL only if that takes more than a minute.
"""
import os
import signal
import subprocess
from pathlib import Path

import pytest

CLUSTER_SH = Path(__file__).resolve().parent / "cluster.sh"
TEARDOWN_SECONDS = 60


def on_hosts(command, hosts=2, timeout=300, env=None):
    """Runs `command` (a program and its arguments) inside `cluster.sh --hosts HOSTS`, its output captured as text,
    and returns the CompletedProcess. Past `timeout` seconds raises subprocess.TimeoutExpired (with the output so
    far), as subprocess.run does, once the hosts are down. Where this machine cannot emulate hosts (cluster.sh's exit
    77: not root, no iproute2) the test is skipped with cluster.sh's reason."""
    args = [str(CLUSTER_SH), "--hosts", str(hosts), "--", *map(str, command)]
    job = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                           env=env if env is not None else os.environ.copy(), start_new_session=True)
    try:
        out, err = job.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        out, err = _tear_down(job)
        raise subprocess.TimeoutExpired(args, timeout, output=out, stderr=err) from None
    except BaseException:
        _tear_down(job)
        raise
    if job.returncode == 77:
        pytest.skip((err.strip().splitlines() or ["cluster.sh cannot emulate hosts here"])[-1])
    return subprocess.CompletedProcess(args, job.returncode, out, err)


def _tear_down(job):
    """SIGTERM to the run's process group (cluster.sh's traps tear the hosts down), SIGKILL after a minute; what it
    printed."""
    _signal_group(job, signal.SIGTERM)
    try:
        return job.communicate(timeout=TEARDOWN_SECONDS)
    except subprocess.TimeoutExpired:
        _signal_group(job, signal.SIGKILL)
        return job.communicate()


def _signal_group(job, sig):
    try:
        os.killpg(job.pid, sig)
    except ProcessLookupError:
        pass
