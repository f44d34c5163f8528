"""Elastic training in place (Open MPI 5's ULFM): no process restarted.

The job runs under Open MPI 5's mpirun with ULFM on (--with-ft ulfm, TCP transports; see
tests/in_place.sh, which builds kolo against it). A 3-rank digits job (tests/elastic/elastic_digits.py)
loses rank 2 mid-epoch: the survivors' ops fail with PeersFailedError, each rolls back to its last
commit, kolo shrinks the job to the 2 survivors and they go on, in the same processes, to the weights of
the one-process reference that follows the same schedule (3 ranks up to that commit, 2 after), and
at least 96% test accuracy.

    KOLO_ULFM_BUILD_DIR=build-ulfm KOLO_ULFM_MPIRUN=.venv-ompi5/bin/mpirun python3 -m pytest tests/in_place
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
BUILD = Path(os.environ.get("KOLO_ULFM_BUILD_DIR", "build-ulfm")).resolve()
MPIRUN = os.environ.get("KOLO_ULFM_MPIRUN", str(HERE.parent.parent / ".venv-ompi5" / "bin" / "mpirun"))
PROGRAM = str(HERE.parent / "elastic" / "elastic_digits.py")
sys.path.insert(0, str(HERE.parent / "elastic"))
from chaos import running  # noqa: E402  (whether a rank process is still there)
sys.path.insert(0, str(BUILD / "python"))

pytestmark = pytest.mark.skipif(not (BUILD / "python" / "kolo").exists() or not os.path.exists(MPIRUN),
                                reason="no kolo built against an MPI with ULFM (tests/in_place.sh builds one)")

# ULFM's own failure detector finds a process that stopped answering (frozen, or its link down): a
# heartbeat each second, a suspect after 4 s without one. (Its optional thread of its own left a shrink
# waiting forever here: MPI's progress, which kolo's threads drive, runs it.)
ULFM = ["--with-ft", "ulfm", "--mca", "btl", "tcp,self", "--mca", "mpi_ft_detector", "true",
        "--mca", "mpi_ft_detector_period", "1", "--mca", "mpi_ft_detector_timeout", "4"]


def job_env(**extra):
    """A job's environment: without this suite's own KOLO_ULFM_* settings (not kolo's), with Open MPI's
    consent to run as root, and `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KOLO_ULFM_")}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", **extra)
    return env


def launch(tmp_path, cmd, env):
    """Starts `cmd`, its output going to tmp_path/job.log: the process and the log (for finish)."""
    log = open(tmp_path / "job.log", "w+")
    return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env), log


def digits(out):
    """The digits program's command line (tests/elastic/elastic_digits.py), its weights going to `out`."""
    from test_elastic import BATCH, COMMIT_EVERY, EPOCHS, LR
    return [sys.executable, PROGRAM, "--epochs", str(EPOCHS), "--batch-size", str(BATCH),
            "--commit-every", str(COMMIT_EVERY), "--lr", str(LR), "--out", str(out)]


def start_job(tmp_path, event, ranks=3, peer_timeout=30):
    env = job_env(PYTHONPATH=str(BUILD / "python"), KOLO_PEER_TIMEOUT_SECONDS=str(peer_timeout),
                  ELASTIC_TEST_EVENT=event, ELASTIC_TEST_HOSTS_AFTER="localhost:%d" % (ranks - 1),
                  ELASTIC_TEST_HOSTS_FILE=str(tmp_path / "hosts"))
    out = tmp_path / "weights.pt"
    cmd = [MPIRUN] + ULFM + ["-np", str(ranks), "--oversubscribe"]
    for name in ("PYTHONPATH", "KOLO_PEER_TIMEOUT_SECONDS", "ELASTIC_TEST_EVENT", "ELASTIC_TEST_HOSTS_AFTER",
                 "ELASTIC_TEST_HOSTS_FILE"):
        cmd += ["-x", name]
    return launch(tmp_path, cmd + digits(out), env) + (out,)


def start_kolorun_job(tmp_path, event, *options, peer_timeout=30, hosts_after="localhost:2", ranks=3, **settings):
    """The same job started as a user would: kolorun --in-place, Open MPI 5's mpirun as KOLO_MPIRUN; kolo
    `settings` in its environment."""
    env = job_env(PYTHONPATH=str(BUILD / "python"), KOLO_MPIRUN=MPIRUN, KOLO_ELASTIC_COMMIT_DIR=str(tmp_path),
                  KOLO_PEER_TIMEOUT_SECONDS=str(peer_timeout), ELASTIC_TEST_EVENT=event,
                  ELASTIC_TEST_HOSTS_AFTER=hosts_after, ELASTIC_TEST_HOSTS_FILE=str(tmp_path / "hosts"), **settings)
    out = tmp_path / "weights.pt"
    cmd = [str(BUILD / "bin" / "kolorun"), "--in-place", "-np", str(ranks), *options]
    for name in ("ELASTIC_TEST_EVENT", "ELASTIC_TEST_HOSTS_AFTER", "ELASTIC_TEST_HOSTS_FILE"):
        cmd += ["-x", name]
    return launch(tmp_path, cmd + digits(out), env) + (out,)


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
    from test_elastic import assert_same_weights, final_line, reference
    left = ranks - 1
    started, ended = pids(text, "starts"), pids(text, "ends")
    assert len(started) == ranks and len(ended) == left, text
    # The survivors are the processes that were the first ranks (the same ranks after): none restarted.
    assert sorted(ended.values()) == sorted(started[r] for r in range(left)), text
    assert ("in place: now rank 0 of %d, from commit 1" % left in text and
            "attempt 0 starts at step 8 on %d ranks" % left in text), text
    weights, accuracy = reference([(8, ranks), (None, left)])
    assert_same_weights(out, weights)
    last = final_line(text)
    assert (last.startswith("ranks %d  steps " % left) and
            float(last.rsplit(" ", 1)[1]) == pytest.approx(accuracy, abs=2e-3)), last
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


def test_a_killed_rank_is_cut_out_in_place(tmp_path):
    # Rank 2 dies before step 10; the last commit was at step 8: steps 8 and 9 are done again on 2 ranks.
    job, log, out = start_job(tmp_path, "0:2:10:die")
    text = finish(job, log)
    assert job.returncode == 0, text
    check_in_place(text, out)
    print("killed: training again %.3f s after the kill" % seconds_to_recover(text))


def test_kolorun_in_place_starts_the_job_and_keeps_it_going(tmp_path):
    # kolorun --in-place puts ULFM's options on Open MPI 5's mpirun and, unlike its restart path, does
    # not end the job when a rank's peer watch reports the lost peer: the survivors go on in place.
    job, log, out = start_kolorun_job(tmp_path, "0:2:10:die", "--min-np", "2")
    text = finish(job, log)
    assert job.returncode == 0, text
    check_in_place(text, out)
    assert "restarting" not in text, text


def test_failures_one_after_another_are_each_cut_out_in_place(tmp_path):
    # 4 ranks: rank 3 dies before step 10 (back to the commit of step 8, on 3 ranks), then the new rank 2
    # before step 22 (back to step 20, on 2 ranks); the first two processes end the job.
    from test_elastic import assert_same_weights, reference
    job, log, out = start_kolorun_job(tmp_path, "0:3:10:die;0:2:22:die", "--min-np", "2", ranks=4,
                                      hosts_after="localhost:3;localhost:2")
    text = finish(job, log, timeout=180)
    assert job.returncode == 0, text
    started, ended = pids(text, "starts"), pids(text, "ends")
    assert len(started) == 4 and sorted(ended.values()) == sorted([started[0], started[1]]), text
    assert "attempt 0 starts at step 8 on 3 ranks" in text and "attempt 0 starts at step 20 on 2 ranks" in text, text
    weights, _ = reference([(8, 4), (20, 3), (None, 2)])
    assert_same_weights(out, weights)
    assert "restarting" not in text, text


@pytest.mark.parametrize("when", ["die-in-recovery", "die-in-sync"])
def test_a_rank_lost_during_the_recovery_is_cut_out_too(tmp_path, when):
    # 4 ranks: rank 3 dies before step 10; rank 2 dies during the recovery from it. die-in-recovery: as the
    # failure reaches it (kolo's communicators revoked), while ranks 0 and 1 roll back and shrink: their
    # shrink agrees on both lost. die-in-sync: after the shrink to 3, in the sync from rank 0: ranks 0 and
    # 1 recover again. Either way they go on from the commit of step 8 on 2 ranks.
    from test_elastic import assert_same_weights, reference
    job, log, out = start_kolorun_job(tmp_path, "0:3:10:die;0:2:10:" + when, "--min-np", "2", ranks=4,
                                      hosts_after="localhost:3;localhost:2")
    text = finish(job, log, timeout=180)
    assert job.returncode == 0, text
    started, ended = pids(text, "starts"), pids(text, "ends")
    assert len(started) == 4 and sorted(ended.values()) == sorted([started[0], started[1]]), text
    assert "attempt 0 starts at step 8 on 2 ranks" in text and "on 3 ranks" not in text, text
    if when == "die-in-sync":
        assert "another peer failed during the recovery, which starts again" in text, text
    weights, _ = reference([(8, 4), (None, 2)])
    assert_same_weights(out, weights)
    assert "restarting" not in text, text


def test_kolorun_in_place_with_fewer_than_min_np_left_ends_the_attempt(tmp_path):
    # --min-np 3: the 2 survivors end the attempt, saying why; --reset-limit 0 then ends the job.
    job, log, out = start_kolorun_job(tmp_path, "0:2:10:die", "--min-np", "3", "--reset-limit", "0")
    text = finish(job, log)
    assert job.returncode != 0, text
    assert "kolo.elastic: 2 ranks left in place, fewer than --min-np 3; ending this attempt" in text, text
    assert "kolorun: --reset-limit 0 reached; ending the job" in text, text
    assert not out.exists()


def test_a_lost_ranks_slot_comes_back_and_the_job_grows_again(tmp_path):
    # kolorun --in-place with a discovery script: rank 2 dies before step 10 (its slot leaves the list),
    # the others go on in place on 2 ranks; before step 20 rank 0 puts the slot back. kolorun, which
    # read the job's new size from the recovery, asks it to restart on the 3 slots: the ranks agree at
    # the next commit and the job goes on from it on 3 ranks (a planned restart, not a reset).
    from test_elastic import assert_same_weights, final_line, is_commit_step, reference
    hosts = tmp_path / "hosts"
    hosts.write_text("localhost:3\n")
    script = tmp_path / "discover.sh"
    script.write_text("#!/bin/sh\ncat %s\n" % hosts)
    script.chmod(0o755)
    job, log, out = start_kolorun_job(tmp_path, "0:2:10:die;0:0:20:grow", "--min-np", "2", "--host-discovery-script",
                                      str(script), "--reset-limit", "0", hosts_after="localhost:2;localhost:3")
    text = finish(job, log, timeout=180)
    assert job.returncode == 0, text
    assert "in place: now rank 0 of 2, from commit 1" in text, text
    assert ("kolorun: hosts localhost:3 have room for 3 ranks while the job runs on 2 of its 3 (lost ones cut out in "
            "place): asking the job to restart on them") in text, text
    assert "a planned restart" in text and "restarting from the last commit" not in text, text
    started = re.findall(r"^attempt 1 starts at step (\d+) on 3 ranks at ", text, re.M)
    assert len(started) == 1, text
    step = int(started[0])
    assert step >= 24 and is_commit_step(step, [(8, 3), (None, 2)]), text  # the first commit after the signal, or later
    weights, accuracy = reference([(8, 3), (step, 2), (None, 3)])
    assert_same_weights(out, weights)
    assert final_line(text).startswith("ranks 3  steps "), text


@pytest.mark.parametrize("hosts,slots,event", [(3, 1, "die"), (2, 2, "die"), (3, 1, "cut"), (3, 1, "freeze")],
                         ids=["3x1", "2x2", "3x1-link-cut", "3x1-freeze"])
def test_in_place_across_emulated_hosts(tmp_path, hosts, slots, event):
    # Emulated hosts (tests/cluster/cluster.sh: network namespaces, as root), started by kolorun
    # --in-place: the last rank (on the last host) is killed before step 10, frozen, or its host's link
    # goes down for good; the others go on in place and the job ends (MPI_Finalize's fence would wait for the
    # lost rank across hosts: kolo skips it once a peer has failed; mpirun would wait for the host cut
    # off: kolorun ends it once every survivor has exited).
    ranks = hosts * slots
    out = tmp_path / "weights.pt"
    command = ('H=$(echo $CLUSTER_HOSTS | sed "s/,/:{slots},/g"):{slots}; timeout 150 {kolorun} --in-place --min-np 2 '
               '-np {ranks} -H $H --rsh-agent $CLUSTER_AGENT --network-interface $CLUSTER_SUBNET -x ELASTIC_TEST_EVENT '
               '-x ELASTIC_TEST_HOSTS_FILE -x ELASTIC_TEST_HOSTS_AFTER {digits}'
               .format(slots=slots, ranks=ranks, kolorun=BUILD / "bin" / "kolorun", digits=" ".join(digits(out))))
    env = job_env(PYTHONPATH=str(BUILD / "python"), KOLO_MPIRUN=MPIRUN, KOLO_PEER_TIMEOUT_SECONDS="3",
                  ELASTIC_TEST_EVENT="0:%d:10:%s" % (ranks - 1, event), ELASTIC_TEST_HOSTS_AFTER="none:1",
                  ELASTIC_TEST_HOSTS_FILE=str(tmp_path / "hosts"))
    job = subprocess.run(["sh", str(HERE.parent / "cluster" / "cluster.sh"), "--hosts", str(hosts), "--", "sh", "-c",
                          command], capture_output=True, text=True, env=env, timeout=240)
    if job.returncode == 77:
        pytest.skip(job.stderr.strip().splitlines()[-1])
    text = job.stdout + job.stderr
    assert job.returncode == 0, text[-4000:]
    check_in_place(text, out, ranks)
    if event == "cut":
        assert "every rank left in place has exited (status 0); mpirun still waits for a lost one" in text, text
        print("link cut: training again %s s after the cut" % seconds_to_recover(text))  # None: its line was lost


def kill_frozen(log, rank):
    """Kills the process `rank` said it started as in the job's log (what the test froze), if it did."""
    log.seek(0)
    started = pids(log.read(), "starts")
    if rank in started:
        try:
            os.kill(started[rank], signal.SIGKILL)
        except ProcessLookupError:
            pass


@pytest.mark.parametrize("peer_timeout", [3, 30])
def test_a_frozen_rank_is_cut_out_in_place(tmp_path, peer_timeout):
    # SIGSTOP: kolo's peer watch (3 s) or ULFM's detector (4 s, before the watch's default 30 s) finds it;
    # the survivors shrink it out. Found by ULFM, it revokes the survivors' peer watches, which stop
    # without a word (a goodbye over a revoked communicator, then freeing it, left the survivors' next
    # communicator unmade). mpirun would wait for the frozen process forever: kolorun ends it once every
    # survivor has exited.
    job, log, out = start_kolorun_job(tmp_path, "0:2:10:freeze", "--min-np", "2", peer_timeout=peer_timeout)
    try:
        text = finish(job, log)
    finally:
        kill_frozen(log, 2)
    assert job.returncode == 0, text
    check_in_place(text, out)
    assert "every rank left in place has exited (status 0); mpirun still waits for a lost one" in text, text
    print("frozen: training again %.3f s after the freeze" % seconds_to_recover(text))


# ULFM's detector off: a frozen rank is found by kolo's peer watch, but MPI never declares it failed, so
# the survivors' shrink would wait for it for good (as when a host is cut off and ULFM misses it). Given
# after ULFM's own options, it overrides them (the last --mca of a name wins).
NO_DETECTOR = ["--mca", "mpi_ft_detector", "false"]


def test_a_recovery_that_cannot_finish_is_given_up_at_its_bound(tmp_path):
    # Under plain mpirun: past KOLO_RECOVERY_TIMEOUT_SECONDS each survivor says so and exits.
    env = job_env(PYTHONPATH=str(BUILD / "python"), KOLO_PEER_TIMEOUT_SECONDS="3", KOLO_RECOVERY_TIMEOUT_SECONDS="6",
                  ELASTIC_TEST_EVENT="0:2:10:freeze", ELASTIC_TEST_HOSTS_AFTER="localhost:2",
                  ELASTIC_TEST_HOSTS_FILE=str(tmp_path / "hosts"))
    cmd = [MPIRUN] + ULFM + NO_DETECTOR + ["-np", "3", "--oversubscribe"]
    for name in ("PYTHONPATH", "KOLO_PEER_TIMEOUT_SECONDS", "KOLO_RECOVERY_TIMEOUT_SECONDS", "ELASTIC_TEST_EVENT",
                 "ELASTIC_TEST_HOSTS_AFTER", "ELASTIC_TEST_HOSTS_FILE"):
        cmd += ["-x", name]
    job, log = launch(tmp_path, cmd + digits(tmp_path / "weights.pt"), env)
    given_up = ["kolo: rank %d of 3: the recovery in place has not finished within 6 s" % r for r in (0, 1)]
    try:
        text = finish(job, log, until=given_up, timeout=120)
        assert all(line in text for line in given_up), text
        assert "exiting with status 1 so that kolorun restarts the job from its last commit" in text, text
        survivors = [pid for rank, pid in pids(text, "starts").items() if rank != 2]
        deadline = time.time() + 10
        while time.time() < deadline and any(running(pid) for pid in survivors):
            time.sleep(0.1)
        assert not any(running(pid) for pid in survivors), text
    finally:
        kill_frozen(log, 2)
        log.seek(0)
        end_job(job, log.read())


def test_kolorun_restarts_a_job_whose_recovery_cannot_finish(tmp_path):
    # The same under kolorun --in-place: the survivors give up and exit with status 1, the attempt ends
    # (here mpirun ends it itself, the frozen rank with it; where mpirun would wait on, for a daemon out of
    # reach, kolorun ends it 10 s after the first rank gave up), and kolorun restarts the job on 3 ranks from
    # the commit of step 8 in its commit directory: it ends as the one-process reference of that schedule.
    job, log, out = start_kolorun_job(tmp_path, "0:2:10:freeze", "--min-np", "2", "--mpi-args", " ".join(NO_DETECTOR),
                                      peer_timeout=3, KOLO_RECOVERY_TIMEOUT_SECONDS="6")
    try:
        text = finish(job, log, timeout=180)
    finally:
        log.seek(0)
        first = re.search(r"rank 2 of 3 starts with pid (\d+)", log.read())  # the first attempt's, frozen
        if first is not None and running(int(first.group(1))):
            os.kill(int(first.group(1)), signal.SIGKILL)
            pytest.fail("the frozen rank of attempt 0 was left behind")
    assert job.returncode == 0, text
    assert "the recovery in place has not finished within 6 s" in text, text
    assert re.search(r"attempt 0 ended with .*; restarting from the last commit \(reset 1 of unlimited\)", text), text
    assert "attempt 1 starts at step 8 on 3 ranks" in text, text
    from test_elastic import assert_same_weights, reference
    weights, _ = reference([(8, 3), (None, 3)])
    assert_same_weights(out, weights)


def test_a_rank_frozen_in_mpis_start_up_restarts_the_attempt(tmp_path):
    # Frozen before init(): the others wait inside MPI_Init for it, where neither kolo's peer watch nor
    # ULFM's detector runs yet. kolorun ends the attempt after --start-timeout and starts the next from the
    # last commit (none yet); no process of the first is left behind.
    env = job_env(PYTHONPATH=str(BUILD / "python"), KOLO_MPIRUN=MPIRUN, KOLO_ELASTIC_COMMIT_DIR=str(tmp_path),
                  ELASTIC_TEST_FREEZE_AT_START="0:2")
    out = tmp_path / "weights.pt"
    cmd = [str(BUILD / "bin" / "kolorun"), "--in-place", "-np", "3", "--start-timeout", "15",
           "-x", "ELASTIC_TEST_FREEZE_AT_START"]
    job, log = launch(tmp_path, cmd + digits(out), env)
    frozen = None
    try:
        text = finish(job, log, timeout=150)
        frozen = re.search(r"frozen at start with pid (\d+)", text)
        assert job.returncode == 0, text
        assert "the ranks of attempt 0 have not all started within --start-timeout 15 s" in text, text
        assert "attempt 1 starts at step 0 on 3 ranks" in text, text
        from test_elastic import assert_same_weights, reference
        weights, _ = reference([(None, 3)])
        assert_same_weights(out, weights)
        assert frozen is not None and not running(int(frozen.group(1))), text
    finally:
        if frozen is not None and running(int(frozen.group(1))):
            os.kill(int(frozen.group(1)), signal.SIGKILL)


def run_least_squares(tmp_path, script, last_line, *flags, backend=None):
    """tf_in_place.py, keras_in_place.py or jax_in_place.py (tests/in_place) on 3 ranks, rank 2 killed
    before step (epoch) 10: checks that the survivors went on in place, and ended, in the same
    processes, with plain gradient descent's weights to 1e-12 (each rank takes an equal share of every
    batch: the averaged gradient is the whole batch's at any rank count). The job's output."""
    python = os.environ.get("KOLO_ULFM_TF_PYTHON", str(HERE.parent.parent / ".venv" / "bin" / "python"))
    framework = backend or {"tf_in_place.py": "tensorflow", "jax_in_place.py": "jax"}[script]  # Keras': backend
    needs = ("keras, " if script == "keras_in_place.py" else "") + framework
    if subprocess.run([python, "-c", "import " + needs], capture_output=True).returncode != 0:
        pytest.skip("%s lacks %s" % (python, needs))
    built = {"tensorflow": "tensorflow/kolo_tf_ops.so", "jax": "jax/libkolo_xla_ffi.so"}[framework]
    if not (BUILD / "python" / "kolo" / built).exists():
        pytest.skip("kolo's %s was not built against this MPI" % built)
    env = job_env(PYTHONPATH=str(BUILD / "python"), KERAS_BACKEND=backend or "tensorflow", JAX_PLATFORMS="cpu")
    out = tmp_path / "w.npy"
    job, log = launch(tmp_path, [MPIRUN] + ULFM + ["-np", "3", "--oversubscribe", "-x", "PYTHONPATH", "-x",
                                                   "KERAS_BACKEND", "-x", "JAX_PLATFORMS", python, str(HERE / script),
                                                   *flags, "--kill-at", "10", "--out", str(out)], env)
    text = finish(job, log, timeout=180)
    assert job.returncode == 0, text
    started, ended = pids(text, "starts"), pids(text, "ends")
    assert len(started) == 3 and sorted(ended.values()) == sorted([started[0], started[1]]), text
    assert "in place: now rank 0 of 2" in text and last_line in text, text
    import numpy as np
    from least_squares import plain_gradient_descent
    np.testing.assert_allclose(np.load(out), plain_gradient_descent(30), rtol=0, atol=1e-12)
    return text


def test_a_tensorflow_loop_goes_on_in_place(tmp_path):
    # kolo.tensorflow's ops report the failure as TensorFlow's error carrying kolo's message; elastic.run
    # rolls back on it as on PeersFailedError. Commits at steps 4 and 8 (commit 1): steps 8 and 9 are
    # done again on 2 ranks.
    text = run_least_squares(tmp_path, "tf_in_place.py", "ranks 2  steps 30", "--steps", "30")
    assert "in place: now rank 0 of 2, from commit 1" in text, text


def test_a_keras_fit_goes_on_in_place(tmp_path):
    # kolo.keras on Keras' TensorFlow backend: model.fit with the elastic callbacks; rank 2 of 3 dies as
    # epoch 10's batch begins; the survivors' fit fails (TensorFlow's InternalError carrying kolo's
    # words), elastic.run rolls back to the commit at epoch 10's start, recovers in place and fits the
    # remaining epochs on 2 ranks.
    run_least_squares(tmp_path, "keras_in_place.py", "ranks 2  epochs 30", "--epochs", "30", backend="tensorflow")


def test_a_keras_fit_on_jax_goes_on_in_place(tmp_path):
    # The same fit on Keras' JAX backend (kolo.keras over kolo.jax): the allreduce in fit's jitted step
    # fails with XLA's error carrying kolo's words; the survivors go back to the commit at epoch 10's
    # start (commit 9) and fit the remaining epochs on 2 ranks.
    text = run_least_squares(tmp_path, "keras_in_place.py", "ranks 2  epochs 30", "--epochs", "30", backend="jax")
    assert "in place: now rank 0 of 2, from commit 9" in text, text


def test_a_jax_loop_goes_on_in_place(tmp_path):
    # kolo.jax.elastic: JaxState and run; the allreduce inside the jitted step fails with XLA's error
    # carrying kolo's words; the survivors roll back to step 8 and go on on 2 ranks.
    text = run_least_squares(tmp_path, "jax_in_place.py", "ranks 2  steps 30", "--steps", "30")
    assert "in place: now rank 0 of 2, from commit 1" in text, text


DEVICE_IN_PLACE = BUILD / "tests" / "device_in_place"
from device_in_place_job import seconds_to_train_again  # noqa: E402 (tests/in_place: the program's time lines)


def check_device_in_place(text, ranks, made, shrunk, broken=False):
    """device_in_place's output (tests/in_place/device_in_place.cc) on `ranks` ranks, rank 1 lost at step 4:
    the survivors go on in place, every later step exact, each with `made` device communicators made and
    `shrunk` shrunk (the double checked the ranks kolo excluded), as kolo's log says too. `broken`: a killed
    peer may have broken some communicators (their error seen on a survivor before the recovery), which
    nobody then shrinks (NCCL refuses to; the double too) and every survivor makes anew where the next job
    needs them: then k fewer are shrunk and at most k more made, the same on every survivor."""
    started, ended = pids(text, "starts"), pids(text, "ends")
    assert len(started) == ranks and sorted(ended.values()) == sorted(p for r, p in started.items() if r != 1), text
    counts = set(re.findall(r"rank \d+ of %d: device communicators made (\d+), shrunk (\d+)" % (ranks - 1), text))
    assert len(counts) == 1, text  # the survivors agreed
    got_made, got_shrunk = (int(n) for n in counts.pop())
    k = shrunk - got_shrunk
    assert (got_made, got_shrunk) == (made, shrunk) or broken and 0 < k <= shrunk and made <= got_made <= made + k, text
    for old in range(ranks):
        if old != 1:
            new = old - (old > 1)
            said = ("rank %d of %d: in place now rank %d of %d, step 4 again" % (old, ranks, new, ranks - 1),
                    "rank %d of %d: device communicators made %d, shrunk %d" % (new, ranks - 1, got_made, got_shrunk))
            assert said[0] in text and said[1] in text, text
    for step in range(4, 10):
        assert "step %d on %d ranks: exact" % (step, ranks - 1) in text, text
    assert len(re.findall(r"rank \d+ of %d: training again: step 4 exact at " % (ranks - 1), text)) == ranks - 1, text
    said = re.findall(r"INFO: recovered in place: [^\n]*?(\d+) GPU communicator\(s\) shrunk", text)
    assert said == [str(got_shrunk)] * (ranks - 1), text
    return got_shrunk


@pytest.mark.parametrize("hierarchical", ["0", "1"], ids=["flat", "hierarchical"])
def test_the_gpu_path_goes_on_in_place_on_the_host_double(tmp_path, hierarchical):
    # Device tensors (the host double, as the GPU suite in CI) on 3 ranks; rank 1 dies while the others'
    # device collectives wait for it. Their ops fail to be rolled back (the device communicators' error
    # taken for the lost peer, in place) and recover_in_place() shrinks the device communicator in use
    # (the job's, or this host's with hierarchical allreduce) to the 2 survivors, as ncclCommShrink, or,
    # where a survivor's saw the peer's end as an error (NCCL then refuses to shrink it), every survivor
    # makes it anew.
    if not DEVICE_IN_PLACE.exists():
        pytest.skip("device_in_place was not built (tests/in_place.sh builds it)")
    job, log = launch(tmp_path, [MPIRUN] + ULFM + ["-np", "3", "--oversubscribe", "-x", "KOLO_HIERARCHICAL_ALLREDUCE",
                                                   str(DEVICE_IN_PLACE), "10", "4"],
                      job_env(KOLO_HIERARCHICAL_ALLREDUCE=hierarchical))
    text = finish(job, log, timeout=120)
    assert job.returncode == 0, text
    shrunk = check_device_in_place(text, 3, made=1, shrunk=1, broken=True)
    print("killed: training again %s s after the kill, %d communicator(s) shrunk" %
          (seconds(seconds_to_train_again(text)), shrunk))


def test_the_gpu_path_goes_on_in_place_when_a_rank_is_frozen(tmp_path):
    # The same with rank 1 frozen (SIGSTOP, alive but silent) on its own stream while the others' device
    # collectives wait for it: nothing fails by itself (NCCL reports no error for a frozen peer either);
    # kolo's peer watch (3 s) revokes, ULFM's detector (4 s) lets the shrink through, and the survivors
    # shrink the device communicator and go on, every later step exact. mpirun would wait for the frozen
    # process forever: once both survivors have exited by themselves, it is killed, whatever happened.
    if not DEVICE_IN_PLACE.exists():
        pytest.skip("device_in_place was not built (tests/in_place.sh builds it)")
    job, log = launch(tmp_path, [MPIRUN] + ULFM + ["-np", "3", "--oversubscribe", "-x", "KOLO_PEER_TIMEOUT_SECONDS",
                                                   str(DEVICE_IN_PLACE), "--device", "double", "--fault", "freeze",
                                                   "10", "4"],
                      job_env(KOLO_PEER_TIMEOUT_SECONDS="3"))
    try:
        text = finish(job, log, until=["rank 0 of 2 ends", "rank 1 of 2 ends"], timeout=120)
        started = pids(text, "starts")
        survivors = [pid for rank, pid in started.items() if rank != 1]
        deadline = time.time() + 20
        while any(running(pid) for pid in survivors) and time.time() < deadline:
            time.sleep(0.2)
        assert not any(running(pid) for pid in survivors), "the survivors did not exit by themselves:\n" + text
    finally:
        kill_frozen(log, 1)
    text = finish(job, log, timeout=30)  # mpirun ends once the frozen process has
    # The double's communicators run on MPI, whose failure detector may find the frozen process before the
    # recovery and break them (NCCL's stay whole: on a GPU they shrank, tools/gpu/run_gpu_in_place.sh).
    check_device_in_place(text, 3, made=1, shrunk=1, broken=True)
    assert "rank 1 of 3: fault freeze at " in text, text
    print("frozen: training again %s s after the freeze" % seconds(seconds_to_train_again(text)))


def seconds(t):
    return "?" if t is None else "%.3f" % t  # None: the victim's last line was lost with it


@pytest.mark.parametrize("hosts,slots,made,shrunk", [(3, 1, 1, 1), (2, 2, 3, 2)], ids=["3x1", "2x2"])
def test_the_gpu_path_shrinks_across_emulated_hosts(tmp_path, hosts, slots, made, shrunk):
    # Hierarchical allreduce on emulated hosts, rank 1 lost. 3x1: the communicator across hosts shrinks
    # to 2 and carries on. 2x2: both hosts' communicators and both across hosts shrink (one host's with
    # nobody excluded), then the hosts are uneven (1 and 2 ranks), so the job's is made for flat allreduce.
    if not DEVICE_IN_PLACE.exists():
        pytest.skip("device_in_place was not built (tests/in_place.sh builds it)")
    command = ('H=$(echo $CLUSTER_HOSTS | sed "s/,/:{slots},/g"):{slots}; timeout 150 {kolorun} --in-place --min-np 2 '
               '-np {ranks} -H $H --rsh-agent $CLUSTER_AGENT --network-interface $CLUSTER_SUBNET '
               '-x KOLO_HIERARCHICAL_ALLREDUCE {program} 10 4'
               .format(slots=slots, ranks=hosts * slots, kolorun=BUILD / "bin" / "kolorun", program=DEVICE_IN_PLACE))
    job = subprocess.run(["sh", str(HERE.parent / "cluster" / "cluster.sh"), "--hosts", str(hosts), "--", "sh", "-c",
                          command], capture_output=True, text=True, timeout=240,
                         env=job_env(KOLO_MPIRUN=MPIRUN, KOLO_HIERARCHICAL_ALLREDUCE="1"))
    if job.returncode == 77:
        pytest.skip(job.stderr.strip().splitlines()[-1])
    text = job.stdout + job.stderr
    assert job.returncode == 0, text[-4000:]
    check_device_in_place(text, hosts * slots, made, shrunk, broken=True)
