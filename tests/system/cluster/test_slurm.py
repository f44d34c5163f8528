"""kolo under a real Slurm on emulated hosts (tests/system/cluster/slurm.sh inside cluster.sh): 2 hosts x 2 CPUs,
a slurmd on each, a slurmctld and munged on this machine, all started and stopped by each test.

Run by ctest (KOLO_BUILD_DIR set), or as root: KOLO_BUILD_DIR=build python3 -m pytest tests/system/cluster/test_slurm.py
"""
import os
import re
import signal
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emulated_hosts import on_hosts
from processes import pids_whose_command_line, running

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
BUILD = Path(os.environ.get("KOLO_BUILD_DIR", ROOT / "build")).resolve()
KOLORUN = BUILD / "bin" / "kolorun"

if os.geteuid() != 0:
    pytest.skip("emulated hosts need root (network namespaces)", allow_module_level=True)
if shutil.which("ip") is None or shutil.which("unshare") is None:
    pytest.skip("emulated hosts need iproute2's ip and util-linux's unshare", allow_module_level=True)
if not (BUILD / "python" / "kolo").exists():
    pytest.skip("kolo's Python package was not built", allow_module_level=True)


def on_slurm(shell_command, timeout, env=None, cpus=2):
    """Runs a shell command on this machine with Slurm up on 2 emulated hosts of `cpus` CPUs each, then tears
    both down.
    Past `timeout` the scripts stop Slurm and the hosts (emulated_hosts.on_hosts). Returns (the finished process,
    whether it timed out)."""
    command = [HERE / "slurm.sh", "--cpus", cpus, "--", "sh", "-c", shell_command]
    try:
        return on_hosts(command, 2, timeout, dict(os.environ, PYTHONPATH=str(BUILD / "python"), OMPI_MCA_opal_signal="",
                                                  **(env or {}))), False
    except subprocess.TimeoutExpired as late:
        return subprocess.CompletedProcess(late.cmd, -signal.SIGTERM, late.output or "", late.stderr or ""), True


def left_behind(work_dir):
    """Processes whose command line names the Slurm run's folder (its daemons), and whether the folder is left."""
    mine = pids_whose_command_line(lambda line: work_dir in line.decode(errors="replace"))
    return mine, Path(work_dir).exists()


# Prints each rank's place in the job and the result of an allreduce big enough not to ride on the
# negotiation (1000 float32). A crash prints the Python line it came from (Open MPI's own
# handler, which prints C frames only, is off: on_slurm): a rank of srun --mpi=pmix once died of SIGSEGV at a
# null address inside the start, with no frame to tell where.
LAYOUT = """
import faulthandler; faulthandler.enable()
import os, socket, sys, torch
import kolo.torch as kolo
kolo.init()
x = kolo.allreduce(torch.full((1000,), float(kolo.rank() + 1)), op=kolo.Sum, name='x')
# One write a line, so that the lines of ranks on one host do not interleave (even unbuffered).
sys.stdout.write('rank %d of %d, local %d of %d, cross %d of %d, on %s: %g\\n' % (kolo.rank(), kolo.size(),
                 kolo.local_rank(), kolo.local_size(), kolo.cross_rank(), kolo.cross_size(),
                 socket.gethostname().rsplit('-', 1)[1], x[0].item()))
"""

# 4 ranks, 2 on each host in order (Slurm's block distribution, mpirun's --map-by slot).
EXPECTED_LAYOUT = ["rank %d of 4, local %d of 2, cross %d of 2, on %d: 10" % (r, r % 2, r // 2, r // 2 + 1)
                   for r in range(4)]


def layout_lines(output):
    return sorted(line for line in output.splitlines() if line.startswith("rank "))


def layout_batch_job(tmp_path, script_body):
    """sbatch --wait -N 2 -n 4 of a script whose body runs LAYOUT (its path in place of %s); asserts that the job
    ended well with every rank in place, and returns its output."""
    program = tmp_path / "layout.py"
    program.write_text(LAYOUT)
    script = tmp_path / "job.sh"
    script.write_text("#!/bin/sh\n%s\n" % (script_body % program))
    out = tmp_path / "job.out"
    job, timed_out = on_slurm("sbatch --wait -N 2 -n 4 -o %s %s" % (out, script), timeout=180)
    output = out.read_text() if out.exists() else ""
    assert not timed_out and job.returncode == 0, output[-3000:] + job.stdout[-2000:] + job.stderr[-3000:]
    assert layout_lines(output) == EXPECTED_LAYOUT, output
    return output


def test_srun_direct_launch_initialises_kolo_with_the_hosts_layout(tmp_path):
    # srun --mpi=pmix starts the ranks itself, no mpirun: kolo finds its ranks, hosts (MPI_COMM_TYPE_SHARED
    # under PMIx) and, across 2 hosts x 2 ranks, goes hierarchical by default (rank 0's timeline).
    program = tmp_path / "layout.py"
    program.write_text(LAYOUT)
    timeline = tmp_path / "timeline.json"
    job, timed_out = on_slurm("srun --mpi=pmix -N 2 -n 4 %s %s" % (sys.executable, program), timeout=150,
                              env={"KOLO_TIMELINE": str(timeline)})
    assert not timed_out and job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert layout_lines(job.stdout) == EXPECTED_LAYOUT, job.stdout
    assert '"collective":"MPI_HIERARCHICAL_ALLREDUCE"' in timeline.read_text()


def test_kolorun_in_a_batch_job_runs_a_rank_per_task_on_the_allocated_hosts(tmp_path):
    # sbatch -N 2 -n 4, whose script says only `kolorun python3 layout.py`: mpirun takes the allocation's
    # hosts and slots from Slurm (kolorun gives it no -H, and -np 4 from the allocation).
    output = layout_batch_job(tmp_path, "exec %s --verbose %s %%s" % (KOLORUN, sys.executable))
    command = re.search(r"^kolorun: .*$", output, re.M).group(0)
    assert " -np 4 --bind-to none --map-by slot " in command and " -H " not in command, command


def test_kolorun_gloo_runs_where_srun_would_start_mpi_ranks(tmp_path):
    # A cluster whose MpiDefault is pmix (SLURM_MPI_TYPE=pmix stands in for it): kolorun --gloo's srun asks for no
    # MPI, so the ranks form the Gloo world through kolorun's store instead of taking PMIx's variables for MPI's.
    layout_batch_job(tmp_path, "export SLURM_MPI_TYPE=pmix\nexec %s --gloo %s %%s" % (KOLORUN, sys.executable))


def test_kolorun_refuses_more_ranks_than_the_allocation_holds_and_starts_nothing(tmp_path):
    started = tmp_path / "started"
    job, timed_out = on_slurm("salloc -N 2 -n 4 %s -np 5 touch %s" % (KOLORUN, started), timeout=120)
    assert not timed_out and job.returncode == 2, job.stdout[-2000:] + job.stderr[-3000:]
    assert re.search(r"^kolorun: -np 5 is more than the 4 tasks of Slurm job \d+ \(SLURM_TASKS_PER_NODE=2\(x2\) on "
                     r"kc\d+-\[1-2\]\); nothing was started\. Ask Slurm for more \(sbatch -n\), or give -np 4 or less$",
                     job.stderr, re.M), job.stderr[-3000:]
    assert not started.exists()


GUIDE = ROOT / "docs" / "slurm.md"


def guide_script(job_name):
    """The batch script in docs/slurm.md whose --job-name is `job_name`."""
    for block in re.findall(r"```sh\n(#!/bin/bash\n.*?)```", GUIDE.read_text(), re.S):
        if "#SBATCH --job-name=%s\n" % job_name in block:
            return block
    raise AssertionError("docs/slurm.md has no batch script named %s" % job_name)


def test_the_slurm_guides_cpu_batch_scripts_run_as_written(tmp_path):
    # docs/slurm.md's CPU scripts, as the page has them: kolorun; srun --mpi=pmix in its place; kolorun --gloo.
    # Only the venv is this build (python, kolorun and PYTHONPATH), and sbatch's options fit them to the rig:
    # 1 task per node, so that the three jobs run at once on 2 hosts of 3 CPUs.
    venv = tmp_path / "venv" / "bin"
    venv.mkdir(parents=True)
    (venv / "python").write_text('#!/bin/sh\nexec %s "$@"\n' % sys.executable)
    (venv / "python").chmod(0o755)
    (venv / "kolorun").symlink_to(KOLORUN)
    (venv / "activate").write_text("export PATH=%s:$PATH PYTHONPATH=%s\n" % (venv, BUILD / "python"))
    (tmp_path / "train.py").write_text(LAYOUT)
    cpu = guide_script("train-cpu")
    srun_line = "srun --mpi=pmix python train.py"
    assert "\n%s\n" % srun_line in GUIDE.read_text()
    scripts = {"train-cpu": cpu,
               "train-srun": cpu.replace("train-cpu", "train-srun").replace("kolorun python train.py", srun_line),
               "train-gloo": guide_script("train-gloo")}
    for name, text in scripts.items():
        assert "\nsource /shared/venvs/kolo/bin/activate\n" in text, text
        (tmp_path / (name + ".sbatch")).write_text(text.replace("/shared/venvs/kolo/bin/activate",
                                                                str(venv / "activate")))
    submit = " ".join("sbatch --wait --ntasks-per-node=1 --cpus-per-task=1 %s.sbatch >/dev/null || echo %s failed &"
                       % (name, name) for name in scripts)
    job, timed_out = on_slurm("cd %s; %s wait" % (tmp_path, submit), timeout=150, cpus=3)
    outputs = {name: "".join(p.read_text() for p in tmp_path.glob(name + "-*.out")) for name in scripts}
    assert not timed_out and job.returncode == 0 and "failed" not in job.stdout, \
        job.stdout + str(outputs)[-4000:] + job.stderr[-3000:]
    for name, output in outputs.items():
        assert layout_lines(output) == ["rank %d of 2, local 0 of 1, cross %d of 2, on %d: 3" % (r, r, r + 1)
                                        for r in range(2)], (name, output)


# Training steps on 4 ranks under srun; rank 3 (on the second host) kills itself at step 20. Every rank
# records its pid first.
FAULT = """
import os, signal, sys, time, torch
import kolo.torch as kolo
kolo.init()
open(os.path.join(sys.argv[1], 'pid.%d' % kolo.rank()), 'w').write(str(os.getpid()))
for step in range(100000):
    if step == 20 and kolo.rank() == 3:
        os.kill(os.getpid(), signal.SIGKILL)
    kolo.allreduce(torch.ones(1000), name='grad')
    time.sleep(0.01)
"""


def test_a_rank_killed_under_srun_ends_the_job_on_every_host_naming_it(tmp_path):
    program = tmp_path / "fault.py"
    program.write_text(FAULT)
    start = time.monotonic()
    job, timed_out = on_slurm("srun --mpi=pmix -N 2 -n 4 %s %s %s" % (sys.executable, program, tmp_path), timeout=150)
    assert not timed_out, job.stderr[-3000:]
    assert job.returncode != 0
    assert re.search(r"^srun: error: kc\d+-2: task 3: Killed$", job.stderr, re.M), job.stderr[-3000:]
    assert time.monotonic() - start < 90
    pids = [int(p.read_text()) for p in tmp_path.glob("pid.*")]
    assert len(pids) == 4
    # Slurm and the hosts are gone by now; so is every rank.
    assert not [p for p in pids if running(p)], "a rank outlived the job"


def test_slurm_is_stopped_and_its_state_removed_after_a_failing_command():
    job, timed_out = on_slurm('echo "$(dirname $SLURM_CONF)"; sinfo --noheader --format=%D; exit 5', timeout=90)
    assert not timed_out and job.returncode == 5, job.stderr[-3000:]
    work_dir, nodes = job.stdout.split()
    assert nodes == "2"
    assert left_behind(work_dir) == ([], False)


def test_slurm_is_stopped_and_its_state_removed_when_the_run_times_out():
    job, timed_out = on_slurm('echo "$(dirname $SLURM_CONF)"; srun -N 2 -n 2 sleep 300', timeout=25)
    assert timed_out
    work_dir = job.stdout.split()[0]
    assert left_behind(work_dir) == ([], False)
