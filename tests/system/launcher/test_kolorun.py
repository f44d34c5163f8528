"""kolorun end to end: real jobs through Open MPI on this host (elastic mode: test_kolorun_elastic.py).

Run by ctest (which sets KOLO_BUILD_DIR), or: KOLO_BUILD_DIR=build python3 -m pytest tests/system/launcher
"""
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kolorun_cli import BUILD, KOLORUN, ROOT, agent, kolorun

EXAMPLE = BUILD / "examples" / "cpp"


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
    examples = Path(__file__).resolve().parents[3] / "examples" / "pytorch"
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
import sys
import torch
import kolo.torch as kolo
try:
    kolo.init()
except Exception as e:
    # One write with its newline: unbuffered, print's two writes let the other rank's line in between.
    sys.stdout.write('rank failed: %s\\n' % e)
    sys.stdout.flush()
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
def test_a_horovodrun_command_line_runs_as_it_is(tmp_path):
    # horovodrun's options and config file, the launcher's name changed: what kolo has takes effect (the
    # timeline, the log level), and what it has not is named once, by rank 0.
    timeline = tmp_path / "timeline.json"
    config = tmp_path / "horovod.yaml"
    config.write_text("params:\n  cycle_time_ms: 2\ntimeline:\n  filename: %s\nlogging:\n  level: INFO\n" % timeline)
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    job = kolorun("-np", "2", "--config-file", str(config), "--num-nccl-streams", "2", "--mpi", "--disable-cache",
                  "--no-mpi-threads-disable", "--output-filename", str(tmp_path / "out"), sys.executable, "-c",
                  HOROVOD_SCRIPT, env=env, timeout=120)
    assert job.returncode == 0, job.stdout + job.stderr
    assert '"args":{"collective":"MPI_ALLREDUCE","fused":1}' in timeline.read_text()
    logs = "".join(p.read_text() for p in sorted((tmp_path / "out").rglob("stderr")))
    assert "[kolo 0] INFO: initialized: rank 0 of 2" in logs, logs
    assert logs.count("HOROVOD_NUM_NCCL_STREAMS=2 has no meaning in kolo, ignored: kolo has no such setting") == 1, logs
    assert "HOROVOD_MPI_THREADS_DISABLE" not in logs  # off is what kolo does: nothing to say


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
    # A dry run only prints the command.
    dry = kolorun("--dry-run", "-np", "1", "true", env=env)
    assert (dry.returncode, dry.stderr) == (0, ""), dry.stderr
    assert dry.stdout.startswith("mpirun ") and dry.stdout.endswith(" true\n"), dry.stdout


def test_an_allocation_that_cannot_be_read_stops_only_a_job_it_would_place():
    env = dict(os.environ, SLURM_JOB_ID="12")
    env.pop("SLURM_TASKS_PER_NODE", None)
    placed = kolorun("--dry-run", "-np", "1", "true", env=env)
    assert placed.returncode == 2
    assert placed.stderr == ("kolorun: inside Slurm job 12, SLURM_TASKS_PER_NODE is not set: cannot tell how many "
                             "ranks the allocation holds\n")
    given = kolorun("--dry-run", "-np", "1", "-H", "localhost:1", "true", env=env)
    assert (given.returncode, given.stderr) == (0, ""), given.stderr


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


def test_the_hostfile_an_mpi_operator_names_gives_the_hosts_and_the_rank_count(tmp_path):
    # A Kubeflow MPIJob's launcher pod: no -H, no -np; the operator's hostfile says where and how many.
    hostfile = tmp_path / "hostfile"
    hostfile.write_text("localhost slots=2\n")
    env = dict(os.environ, OMPI_MCA_orte_default_hostfile=str(hostfile))
    job = kolorun(str(EXAMPLE / "logistic_regression_kolo"), env=env)
    assert job.returncode == 0, job.stderr
    single = subprocess.run([str(EXAMPLE / "logistic_regression")], capture_output=True, text=True, timeout=60)
    assert job.stdout == single.stdout
