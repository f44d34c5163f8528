"""A session directory that a killed Open MPI 5 mpirun left behind no longer fails the next launch.

Open MPI 5's mpirun (PRRTE) keeps its PMIx rendezvous files in <tmpdir>/ompi.<its pid> and removes the
directory when it ends; killed (SIGKILL), it cannot. The next mpirun that gets the same pid finds it and
fails at once ("The PMIx server's listener thread failed to start", status 213): an elastic attempt lost to
nothing but pid reuse. kolorun removes the directory named for the pid mpirun will have before it starts it,
and the directory of an mpirun it had to kill once that mpirun has ended.

The tests give a process a chosen pid through /proc/sys/kernel/ns_last_pid (root only, as CI runs).
"""
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from in_place_job import BUILD, MPI_ONLY, MPIRUN, NEEDS_ULFM_BUILD, job_env  # noqa: E402

LAST_PID = "/proc/sys/kernel/ns_last_pid"

pytestmark = [NEEDS_ULFM_BUILD, MPI_ONLY,
              pytest.mark.skipif(not os.access(LAST_PID, os.W_OK), reason="choosing a pid needs root (ns_last_pid)")]


def start_with_pid(pid, cmd, env, **kw):
    """Starts `cmd` as process `pid`: the kernel gives the next new process ns_last_pid + 1, unless another
    process forks in between; then that process is ended and the start tried again."""
    for _ in range(20):
        with open(LAST_PID, "w") as f:
            f.write(str(pid - 1))
        proc = subprocess.Popen(cmd, env=env, **kw)
        if proc.pid == pid:
            return proc
        proc.kill()
        proc.wait()
    pytest.skip("could not start a process as pid %d (another process kept taking it)" % pid)


@pytest.fixture
def tmpdir_env():
    """A job environment whose TMPDIR is a fresh directory of its own (short: PMIx writes paths under it)."""
    top = tempfile.mkdtemp(prefix="kolo-sd-", dir="/tmp")
    yield Path(top), job_env(TMPDIR=top)
    shutil.rmtree(top, ignore_errors=True)


# Run as a process of its own that adopts its orphans (PR_SET_CHILD_SUBREAPER): it starts mpirun, kills it
# (SIGKILL) once its session directory is whole, kills and reaps the rank left behind (the pid is not free
# again while the session it leads has a process, a zombie included), and prints mpirun's pid.
KILLED_MPIRUN = r"""
import ctypes, os, signal, subprocess, sys, time
from pathlib import Path
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)
top, mpirun = Path(sys.argv[1]), sys.argv[2]
job = subprocess.Popen([mpirun, "-np", "1", "sleep", "60"], start_new_session=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
session = top / ("ompi.%d" % job.pid)
deadline = time.time() + 30
while time.time() < deadline and not any(p.name.startswith("pmix.") for p in session.glob("*")):
    time.sleep(0.05)
time.sleep(0.5)
os.kill(job.pid, signal.SIGKILL)
job.wait()
for stat in Path("/proc").glob("[0-9]*/stat"):
    try:
        if int(stat.read_text().rsplit(")", 1)[1].split()[3]) == job.pid:
            os.kill(int(stat.parent.name), signal.SIGKILL)
    except (OSError, ValueError):
        pass
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
print(job.pid)
"""


def leave_stale_session_dir(top, env):
    """An Open MPI 5 mpirun killed (SIGKILL), its rank with it: its pid, whose <top>/ompi.<pid> is left behind."""
    run = subprocess.run([sys.executable, "-c", KILLED_MPIRUN, str(top), MPIRUN], env=env, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    pid = int(run.stdout)
    assert (top / ("ompi.%d" % pid)).is_dir(), "mpirun made no session directory in %s" % top
    return pid


def run_with_pid(pid, cmd, env):
    proc = start_with_pid(pid, cmd, env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out, _ = proc.communicate(timeout=60)
    return proc.returncode, out


def test_an_mpirun_killed_before_fails_plain_mpirun_that_gets_its_pid(tmpdir_env):
    # What kolorun guards against, as Open MPI 5.0.11 does it: if this starts passing, the guard is moot.
    top, env = tmpdir_env
    pid = leave_stale_session_dir(top, env)
    rc, out = run_with_pid(pid, [MPIRUN, "-np", "1", "true"], env)
    assert rc == 213 and "listener thread failed to start" in out, out


def test_kolorun_starts_mpirun_with_the_pid_of_one_killed_before(tmpdir_env):
    top, env = tmpdir_env
    pid = leave_stale_session_dir(top, env)
    env.update(KOLO_MPIRUN=MPIRUN)
    # kolorun execs mpirun: mpirun keeps kolorun's pid.
    rc, out = run_with_pid(pid, [str(BUILD / "bin" / "kolorun"), "-np", "2", "/bin/echo", "ran"], env)
    assert rc == 0 and out.count("ran\n") == 2, out
    assert list(top.glob("ompi.*")) == [], out


def test_kolorun_removes_the_session_dir_of_an_mpirun_it_killed(tmpdir_env):
    # mpirun ignores SIGTERM here (a trap in the stand-in below), as one waiting on a rank frozen out of
    # reach may: kolorun kills it when --start-timeout passes with no rank started, then removes its directory.
    top, env = tmpdir_env
    stubborn = top / "mpirun"
    stubborn.write_text("#!/bin/sh\n"
                        "[ \"$1\" = --version ] && exec \"$REAL_MPIRUN\" --version\n"
                        "trap '' TERM\n"
                        "mkdir -p \"$TMPDIR/ompi.$$/0\"\n"
                        "echo rendezvous > \"$TMPDIR/ompi.$$/pmix.tool\"\n"
                        "exec sleep 60\n")
    stubborn.chmod(0o755)
    env.update(KOLO_MPIRUN=str(stubborn), REAL_MPIRUN=MPIRUN)
    run = subprocess.run([str(BUILD / "bin" / "kolorun"), "--in-place", "-np", "2", "--start-timeout", "1",
                          "--reset-limit", "0", "true"], env=env, capture_output=True, text=True, timeout=60)
    text = run.stdout + run.stderr
    assert "have not all started within --start-timeout 1 s" in text, text
    assert "ended with signal 9" in text, text
    assert list(top.glob("ompi.*")) == [], text
