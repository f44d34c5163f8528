"""The Gloo world from a user's seat: kolorun --gloo with no mpirun anywhere, a job started by hand from
shells with the bare variables, each training the Horovod-style program (tests/system/elastic/elastic_digits.py)
to one process's weights; and a bad start, each failing within its bound, naming what is wrong.

Run by ctest (gloo_launch), or: KOLO_BUILD_DIR=build python3 -m pytest tests/system/gloo
"""
import os
import re
import shutil
import subprocess
import sys
import time

import pytest

from gloo_jobs import BUILD, HERE, KOLORUN, PROGRAM, bare_launch, clean_env, free_port, run_program

sys.path.insert(0, str(HERE.parent / "elastic"))
from test_elastic import assert_same_weights, final_word, reference  # noqa: E402

if not (BUILD / "python" / "kolo").exists():
    pytest.skip("kolo's Python package was not built", allow_module_level=True)
if "[X] Gloo" not in subprocess.run([KOLORUN, "--check-build"], capture_output=True, text=True).stdout:
    pytest.skip("this kolo was built without Gloo (KOLO_WITH_GLOO)", allow_module_level=True)

# What a rank says of its start: its world, and any MPI launcher's variable it was given.
WHO = ("import os, sys, kolo.torch as k; k.init(); "
       "sys.stdout.write('rank %d of %d gloo %s mpi vars %s\\n' % (k.rank(), k.size(), k.gloo_enabled(), "
       "sorted(v for v in os.environ if v.startswith(('OMPI_', 'PMIX_', 'PMI_'))))); sys.stdout.flush(); k.shutdown()")


def test_kolorun_gloo_needs_no_mpirun_and_trains_to_one_process_weights(tmp_path):
    # A PATH without mpirun: kolorun --gloo starts every rank itself, and none gets MPI's variables.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(sys.executable, bin_dir / "python3")
    env = clean_env(PATH=str(bin_dir))
    assert shutil.which("mpirun", path=env["PATH"]) is None
    job = subprocess.run([KOLORUN, "--gloo", "-np", "2", "python3", "-c", WHO], capture_output=True, text=True,
                         timeout=120, env=env)
    assert job.returncode == 0, job.stdout + job.stderr
    for r in (0, 1):
        assert "rank %d of 2 gloo True mpi vars []" % r in job.stdout, job.stdout
    out = tmp_path / "weights.pt"
    job = subprocess.run([KOLORUN, "--gloo", "-np", "2"] + run_program(out), capture_output=True, text=True,
                         timeout=300, env=env)
    assert job.returncode == 0, job.stdout + job.stderr
    weights, accuracy = reference([(None, 2)])
    assert_same_weights(out, weights)
    size, _, final = final_word(job.stdout)
    assert size == 2 and final == pytest.approx(accuracy, abs=2e-3)


def test_a_job_started_by_hand_from_four_shells_trains_to_the_same_weights(tmp_path):
    out = tmp_path / "weights.pt"
    results = bare_launch(4, run_program(out), timeout=300)
    for r in results:
        assert r.returncode == 0, r.stdout + r.stderr
    weights, _ = reference([(None, 4)])
    assert_same_weights(out, weights)


def test_ranks_that_do_not_all_come_are_named_within_the_start_timeout():
    # WORLD_SIZE 3, rank 2 never started: ranks 0 and 1 fail after KOLO_GLOO_TIMEOUT_SECONDS, naming it (rank 1
    # started later, so rank 0 may give up first and take its store with it: rank 1 names rank 2 all the same).
    start = time.monotonic()
    results = bare_launch(3, [sys.executable, "-c", WHO], ranks=[0, 1], KOLO_GLOO_TIMEOUT_SECONDS=3)
    assert time.monotonic() - start < 30
    for r in results:
        assert r.returncode != 0
        assert re.search(r"init\(\) on rank [01]: rank 2 of 3 did not come (within 3 s|before the store closed \(.*\)) "
                         r"\(KOLO_GLOO_TIMEOUT_SECONDS; a "
                         r"WORLD_SIZE larger than the ranks started\?\) \(started by MASTER_ADDR/MASTER_PORT/RANK/"
                         r"WORLD_SIZE, store 127\.0\.0\.1:\d+\)", r.stderr), r.stderr


def test_a_store_that_cannot_be_reached_is_named_within_the_start_timeout():
    port = free_port()  # nobody serves it
    start = time.monotonic()
    [r] = bare_launch(2, [sys.executable, "-c", WHO], port=port, ranks=[1], KOLO_GLOO_TIMEOUT_SECONDS=2)
    assert time.monotonic() - start < 30
    assert r.returncode != 0
    assert "init() on rank 1: the job's store cannot be reached:" in r.stderr, r.stderr
    assert "127.0.0.1:%d" % port in r.stderr, r.stderr


def test_a_second_job_on_the_same_port_is_refused(tmp_path):
    # Job A holds MASTER_PORT; job B's rank 0 finds it taken by another process and fails saying so, and B's
    # rank 1 (which reaches A's store) never meets a rank 0 of its own: it fails within the timeout.
    port = free_port()
    hold = "import time, kolo.torch as k; k.init(); time.sleep(6); k.shutdown()"
    env = dict(RANK=0, WORLD_SIZE=2, MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
    a = [subprocess.Popen([sys.executable, "-c", hold], env=clean_env(**dict(env, RANK=r)), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True) for r in (0, 1)]
    time.sleep(2)
    b = bare_launch(2, [sys.executable, "-c", WHO], port=port, KOLO_GLOO_TIMEOUT_SECONDS=3)
    for p in a:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, out + err
    assert b[0].returncode != 0 and "is taken by another process" in b[0].stderr, b[0].stderr
    assert b[1].returncode != 0 and "rank 0 of 2 did not come within 3 s" in b[1].stderr, b[1].stderr


def test_a_rank_without_the_jobs_token_is_refused_unread(tmp_path):
    # kolorun --gloo's store takes only connections that bring the job's token: a stray rank given the store's
    # address but another token cannot join.
    hold = "import time, kolo.torch as k; k.init(); time.sleep(5); k.shutdown()"
    job = subprocess.Popen([KOLORUN, "--gloo", "--verbose", "-np", "2", sys.executable, "-c", hold],
                           env=clean_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = ""
    deadline = time.monotonic() + 30
    while "the job's store at" not in line and time.monotonic() < deadline:
        line = job.stderr.readline()
    host, port = re.search(r"the job's store at (\S+):(\d+)", line).groups()
    stray = subprocess.run([sys.executable, "-c", WHO], capture_output=True, text=True, timeout=60,
                           env=clean_env(KOLO_STORE_ADDR=host, KOLO_STORE_PORT=port, KOLO_STORE_TOKEN="guess",
                                         RANK=1, WORLD_SIZE=2, KOLO_GLOO_TIMEOUT_SECONDS=3))
    job.communicate(timeout=60)
    assert job.returncode == 0
    assert stray.returncode != 0 and "the job's store cannot be reached" in stray.stderr, stray.stderr


# kolorun --gloo --in-place's ranks, as the survivors of a lost rank and the lost rank itself say it: ranks 0 and
# 1 exit, saying so as kolo's survivors do; rank 2, cut off, gives up a moment later with status 1.
LOST_LAST = r"""
import os, sys, time
rank, attempt = int(os.environ["RANK"]), int(os.environ["KOLO_ELASTIC_ATTEMPT"])
if attempt > 0:
    sys.exit(0)
if rank < 2:
    print("kolo: rank %d of 2, left in place after a peer was lost, exits with status 0" % rank, file=sys.stderr)
    sys.exit(0)
time.sleep(1)
sys.exit(1)
"""


def test_in_place_the_survivors_status_is_the_jobs_when_the_lost_rank_ends_last(tmp_path):
    # The job is the survivors': a lost rank that ends after them (before kolorun would end it) is no failed
    # attempt to restart (CI saw the restart wait for good for the host cut off).
    script = tmp_path / "lost_last.py"
    script.write_text(LOST_LAST)
    job = subprocess.run([KOLORUN, "--gloo", "--in-place", "--min-np", "2", "-np", "3", "-H", "localhost:3",
                          sys.executable, str(script)], capture_output=True, text=True, timeout=60, env=clean_env())
    assert job.returncode == 0, job.stderr
    assert "restarting" not in job.stderr, job.stderr


TRAINING = r"""
import os, signal, sys, time
import torch
import kolo.torch as kolo
kolo.init()
fate = sys.argv[1]
try:
    for step in range(10000):
        if step == 50 and kolo.rank() == 1:
            os.kill(os.getpid(), signal.SIGKILL if fate == "kill" else signal.SIGSTOP)
        kolo.allreduce(torch.ones(1000), name="grad")
        time.sleep(0.01)
except kolo.KoloError as e:
    sys.stdout.write("rank %d: %s\n" % (kolo.rank(), e))
    sys.stdout.flush()
    sys.exit(3)
"""


@pytest.mark.parametrize("fate", ["kill", "freeze"])
def test_a_lost_rank_ends_the_job_naming_it(tmp_path, fate):
    script = tmp_path / "train.py"
    script.write_text(TRAINING)
    start = time.monotonic()
    job = subprocess.run([KOLORUN, "--gloo", "-np", "3", sys.executable, str(script), fate], capture_output=True,
                         text=True, timeout=120, env=clean_env(KOLO_PEER_TIMEOUT_SECONDS=3))
    elapsed = time.monotonic() - start
    assert job.returncode != 0
    assert elapsed < 40, "the job took %.0f s to end (peer timeout 3 s)" % elapsed
    if fate == "kill":
        assert re.search(r"kolorun: rank 1 \(pid \d+ on \S+\) exited on signal 9 \(Killed\): ending the job",
                         job.stderr), job.stderr
    else:
        # The first survivor to fail ends the job (kolorun then stops the others): each that spoke names it.
        host = subprocess.run(["hostname"], capture_output=True, text=True).stdout.strip()
        said = [line for line in job.stdout.splitlines() if line.startswith(("rank 0:", "rank 2:"))]
        assert said, job.stdout + job.stderr
        for line in said:
            assert "rank 1 (host %s) sent no heartbeat for 3." % host in line, job.stdout + job.stderr
