"""What the in-place suite's tests share: starting a job under Open MPI 5's mpirun with ULFM (or under
kolorun --in-place), waiting for it, reading its output, checking it against the one-process reference.

Elastic training in place (Open MPI 5's ULFM): no process restarted.

The job runs under Open MPI 5's mpirun with ULFM on (--with-ft ulfm, TCP transports; see
tests/elastic_in_place.sh, which builds kolo against it). A 3-rank digits job (tests/system/elastic/elastic_digits.py)
loses rank 2 mid-epoch: the survivors' ops fail with PeersFailedError, each rolls back to its last
commit, kolo shrinks the job to the 2 survivors and they go on, in the same processes, to the weights of
the one-process reference that follows the same schedule (3 ranks up to that commit, 2 after), and
at least 96% test accuracy.

    KOLO_ULFM_BUILD_DIR=build-ulfm KOLO_ULFM_MPIRUN=.venv-ompi5/bin/mpirun python3 -m pytest tests/system/elastic_in_place
"""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
# The suite runs in either world: MPI's with ULFM (the default: build-ulfm, Open MPI 5's mpirun) or, with
# IN_PLACE_WORLD=gloo, the Gloo world (the main build, kolorun --gloo --in-place, no mpirun); the tests that
# are MPI's alone (plain mpirun with ULFM, MPI's start-up, Open MPI's crash) are marked MPI_ONLY.
GLOO = os.environ.get("IN_PLACE_WORLD", "mpi") == "gloo"
BUILD = Path(os.environ.get("KOLO_ULFM_BUILD_DIR", "build" if GLOO else "build-ulfm")).resolve()
MPIRUN = os.environ.get("KOLO_ULFM_MPIRUN", str(HERE.parents[2] / ".venv-ompi5" / "bin" / "mpirun"))
# kolorun's flags for the world, and its word for what runs an attempt's ranks (launcher/attempt_watch.cc).
WORLD_FLAGS = ["--gloo"] if GLOO else []
RUNNER = "the attempt's kolorun --gloo" if GLOO else "mpirun"
PROGRAM = str(HERE.parent / "elastic" / "elastic_digits.py")
sys.path.insert(0, str(HERE.parent / "elastic"))
from chaos import running  # noqa: E402,F401  (whether a rank process is still there; for the tests)
sys.path.insert(0, str(BUILD / "python"))

# Each test module's pytestmark.
if GLOO:
    NEEDS_ULFM_BUILD = pytest.mark.skipif(not (BUILD / "python" / "kolo").exists() or
                                          "[X] Gloo" not in subprocess.run([str(BUILD / "bin" / "kolorun"), "--check-build"],
                                                                           capture_output=True, text=True).stdout,
                                          reason="no kolo built with Gloo in %s" % BUILD)
else:
    NEEDS_ULFM_BUILD = pytest.mark.skipif(not (BUILD / "python" / "kolo").exists() or not os.path.exists(MPIRUN),
                                          reason="no kolo built against an MPI with ULFM (tests/elastic_in_place.sh builds one)")
MPI_ONLY = pytest.mark.skipif(GLOO, reason="MPI's own (ULFM under plain mpirun, MPI's start-up, Open MPI's crash)")

# ULFM's own failure detector finds a process that stopped answering (frozen, or its link down): a
# heartbeat each second, a suspect after 4 s without one. (Its optional thread of its own left a shrink
# waiting forever here: MPI's progress, which kolo's threads drive, runs it.)
ULFM = ["--with-ft", "ulfm", "--mca", "btl", "tcp,self", "--mca", "mpi_ft_detector", "true",
        "--mca", "mpi_ft_detector_period", "1", "--mca", "mpi_ft_detector_timeout", "4"]


def job_env(**extra):
    """A job's environment: without this suite's own KOLO_ULFM_* settings (not kolo's), with Open MPI's
    consent to run as root, in the Gloo world with KOLO_GLOO_IN_PLACE (a plain kolorun --gloo's ranks then
    survive in place, as ULFM's under plain mpirun), and `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KOLO_ULFM_")}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", **extra)
    if GLOO:
        env["KOLO_GLOO_IN_PLACE"] = "1"
    return env


def plain_launch(np, *exported):
    """`np` ranks started plainly, not elastic, surviving in place: Open MPI 5's mpirun with ULFM, or kolorun
    --gloo (with job_env's KOLO_GLOO_IN_PLACE); `exported`: variables passed on to every rank."""
    if GLOO:
        cmd = [str(BUILD / "bin" / "kolorun"), "--gloo", "-np", str(np)]
    else:
        cmd = [MPIRUN] + ULFM + ["-np", str(np), "--oversubscribe"]
    for name in exported:
        cmd += ["-x", name]
    return cmd


def launch(tmp_path, cmd, env):
    """Starts `cmd`, its output going to tmp_path/job.log: the process and the log (for finish)."""
    # Appending: the job shares this file's offset, which finish()'s seek(0) moves; without O_APPEND a line
    # the job wrote between that seek and the read landed over the log's start.
    log = open(tmp_path / "job.log", "a+")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env), log


def digits(out):
    """The digits program's command line (tests/system/elastic/elastic_digits.py), its weights going to `out`."""
    from test_elastic import BATCH, COMMIT_EVERY, EPOCHS, LR
    return [sys.executable, PROGRAM, "--epochs", str(EPOCHS), "--batch-size", str(BATCH),
            "--commit-every", str(COMMIT_EVERY), "--lr", str(LR), "--out", str(out)]


def start_job(tmp_path, event, ranks=3, peer_timeout=30, program_args=()):
    env = job_env(PYTHONPATH=str(BUILD / "python"), KOLO_PEER_TIMEOUT_SECONDS=str(peer_timeout),
                  ELASTIC_TEST_EVENT=event, ELASTIC_TEST_HOSTS_AFTER="localhost:%d" % (ranks - 1),
                  ELASTIC_TEST_HOSTS_FILE=str(tmp_path / "hosts"))
    out = tmp_path / "weights.pt"
    cmd = [MPIRUN] + ULFM + ["-np", str(ranks), "--oversubscribe"]
    for name in ("PYTHONPATH", "KOLO_PEER_TIMEOUT_SECONDS", "ELASTIC_TEST_EVENT", "ELASTIC_TEST_HOSTS_AFTER",
                 "ELASTIC_TEST_HOSTS_FILE"):
        cmd += ["-x", name]
    return launch(tmp_path, cmd + digits(out) + list(program_args), env) + (out,)


def start_kolorun_job(tmp_path, event, *options, peer_timeout=30, hosts_after="localhost:2", ranks=3, program_args=(),
                      **settings):
    """The same job started as a user would: kolorun --in-place, Open MPI 5's mpirun as KOLO_MPIRUN; kolo
    `settings` in its environment, `program_args` after the digits program's own."""
    env = job_env(PYTHONPATH=str(BUILD / "python"), KOLO_MPIRUN=MPIRUN, KOLO_ELASTIC_COMMIT_DIR=str(tmp_path),
                  KOLO_PEER_TIMEOUT_SECONDS=str(peer_timeout), ELASTIC_TEST_EVENT=event,
                  ELASTIC_TEST_HOSTS_AFTER=hosts_after, ELASTIC_TEST_HOSTS_FILE=str(tmp_path / "hosts"), **settings)
    out = tmp_path / "weights.pt"
    cmd = [str(BUILD / "bin" / "kolorun")] + WORLD_FLAGS + ["--in-place", "-np", str(ranks), *options]
    for name in ("ELASTIC_TEST_EVENT", "ELASTIC_TEST_HOSTS_AFTER", "ELASTIC_TEST_HOSTS_FILE"):
        cmd += ["-x", name]
    return launch(tmp_path, cmd + digits(out) + list(program_args), env) + (out,)


def finish(job, log, until=(), timeout=120):
    """Waits for the job to end (or for every line of `until` in its output); its output. A job that
    does not is ended, every rank with it, and the test fails."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        log.seek(0)
        text = log.read()
        if job.poll() is not None or (until and all(u in text for u in until)):
            return text
        time.sleep(0.2)
    end_job(job, text)
    pytest.fail("the job did not end within %d s:\n%s" % (timeout, text))


def end_job(job, text):
    """Ends mpirun and every rank the output names: killing Open MPI 5's mpirun alone leaves its ranks
    running (spinning, if they wait in MPI), which would slow everything after."""
    for pid in pids(text, "starts").values():
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    job.kill()
    job.wait()


def pids(text, word):
    # Not anchored to lines: mpirun may forward two ranks' lines as one.
    return {int(rank): int(pid) for rank, pid in re.findall(r"rank (\d+) of \d+ %s with pid (\d+)" % word, text)}


def check_in_place(text, out, ranks=3):
    """`ranks` started; the last was lost at step 10, the others rolled back to the commit of step 8 in
    place and ended as the one-process reference of that schedule."""
    from test_elastic import assert_same_weights, final_word, reference
    left = ranks - 1
    started, ended = pids(text, "starts"), pids(text, "ends")
    assert len(started) == ranks and len(ended) == left, text
    # The survivors are the processes that were the first ranks (the same ranks after): none restarted.
    assert sorted(ended.values()) == sorted(started[r] for r in range(left)), text
    assert ("in place: now rank 0 of %d, from commit 1" % left in text and
            "attempt 0 starts at step 8 on %d ranks" % left in text), text
    weights, accuracy = reference([(8, ranks), (None, left)])
    assert_same_weights(out, weights)
    size, _, final_accuracy = final_word(text)
    assert size == left and final_accuracy == pytest.approx(accuracy, abs=2e-3), text
    assert accuracy >= 0.95


def seconds_to_recover(text):
    """Seconds from the event to training again; None if the event's line did not arrive (a host cut off
    may lose its last output)."""
    event = re.search(r"^event \w+ at ([\d.]+)$", text, re.M)
    if event is None:
        return None
    failed = float(event.group(1))
    back = float(re.search(r"^attempt 0 starts at step 8 on 2 ranks at ([\d.]+)$", text, re.M).group(1))
    return back - failed


def kill_frozen(log, rank):
    """Kills the process `rank` said it started as in the job's log (what the test froze), if it did."""
    log.seek(0)
    started = pids(log.read(), "starts")
    if rank in started:
        try:
            os.kill(started[rank], signal.SIGKILL)
        except ProcessLookupError:
            pass
