"""Elastic training in place (Open MPI 5's ULFM, or the Gloo world: IN_PLACE_WORLD=gloo), the digits job: killed, frozen and cut-off ranks, on one
host and on emulated hosts, failures one after another and during a recovery, growing back, and a
recovery that cannot finish. The helpers are in in_place_job.py; the framework loops and the GPU path in
test_in_place_frameworks.py.

    KOLO_ULFM_BUILD_DIR=build-ulfm KOLO_ULFM_MPIRUN=.venv-ompi5/bin/mpirun python3 -m pytest tests/system/elastic_in_place
    IN_PLACE_WORLD=gloo python3 -m pytest tests/system/elastic_in_place     # the Gloo world: build/, no mpirun
"""
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
from emulated_hosts import on_hosts  # noqa: E402
from in_place_job import (  # noqa: E402
    BUILD, MPI_ONLY, MPIRUN, NEEDS_ULFM_BUILD, RUNNER, ULFM, WORLD_FLAGS, check_in_place, digits, end_job, finish, job_env, kill_frozen, launch, pids, running, seconds_to_recover, start_job, start_kolorun_job)

pytestmark = NEEDS_ULFM_BUILD


@MPI_ONLY
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


# zero_stage 1 and 2: the optimizer's state sharded (SGD's momentum): each commit holds it whole, and each
# recovery cuts it into the shards of 3 ranks, then of 2.
@pytest.mark.parametrize("zero_stage", [0, 1, 2])
def test_failures_one_after_another_are_each_cut_out_in_place(tmp_path, zero_stage):
    # 4 ranks: rank 3 dies before step 10 (back to the commit of step 8, on 3 ranks), then the new rank 2
    # before step 22 (back to step 20, on 2 ranks); the first two processes end the job.
    from test_elastic import assert_same_weights, reference
    job, log, out = start_kolorun_job(tmp_path, "0:3:10:die;0:2:22:die", "--min-np", "2", ranks=4,
                                      hosts_after="localhost:3;localhost:2",
                                      program_args=["--zero-stage", str(zero_stage)])
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
    from test_elastic import assert_same_weights, final_word, is_commit_step, reference
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
    started = re.findall(r"attempt 1 starts at step (\d+) on 3 ranks at ", text)  # (final_word's why)
    assert len(started) == 1, text
    step = int(started[0])
    assert step >= 24 and is_commit_step(step, [(8, 3), (None, 2)]), text  # the first commit after the signal, or later
    weights, accuracy = reference([(8, 3), (step, 2), (None, 3)])
    assert_same_weights(out, weights)
    assert final_word(text)[0] == 3, text


@pytest.mark.parametrize("hosts,slots,event", [(3, 1, "die"), (2, 2, "die"), (3, 1, "cut"), (3, 1, "freeze")],
                         ids=["3x1", "2x2", "3x1-link-cut", "3x1-freeze"])
def test_in_place_across_emulated_hosts(tmp_path, hosts, slots, event):
    # Emulated hosts (tests/system/cluster/cluster.sh: network namespaces, as root), started by kolorun
    # --in-place: the last rank (on the last host) is killed before step 10, frozen, or its host's link
    # goes down for good; the others go on in place and the job ends (MPI_Finalize's fence would wait for the
    # lost rank across hosts: kolo skips it once a peer has failed; mpirun would wait for the host cut
    # off: kolorun ends it once every survivor has exited).
    ranks = hosts * slots
    out = tmp_path / "weights.pt"
    command = ('H=$(echo $CLUSTER_HOSTS | sed "s/,/:{slots},/g"):{slots}; timeout 150 {kolorun} {world} --in-place --min-np 2 '
               '-np {ranks} -H $H --rsh-agent $CLUSTER_AGENT --network-interface $CLUSTER_SUBNET -x ELASTIC_TEST_EVENT '
               '-x ELASTIC_TEST_HOSTS_FILE -x ELASTIC_TEST_HOSTS_AFTER {digits}'
               .format(slots=slots, ranks=ranks, kolorun=BUILD / "bin" / "kolorun", world=" ".join(WORLD_FLAGS),
                       digits=" ".join(digits(out))))
    env = job_env(PYTHONPATH=str(BUILD / "python"), KOLO_MPIRUN=MPIRUN, KOLO_PEER_TIMEOUT_SECONDS="3",
                  ELASTIC_TEST_EVENT="0:%d:10:%s" % (ranks - 1, event), ELASTIC_TEST_HOSTS_AFTER="none:1",
                  ELASTIC_TEST_HOSTS_FILE=str(tmp_path / "hosts"))
    job = on_hosts(["sh", "-c", command], hosts, 240, env)
    text = job.stdout + job.stderr
    assert job.returncode == 0, text[-4000:]
    check_in_place(text, out, ranks)
    if event == "cut":
        assert "every rank left in place has exited (status 0); %s still waits for a lost one" % RUNNER in text, text
        print("link cut: training again %s s after the cut" % seconds_to_recover(text))  # None: its line was lost


# 30 s: ULFM's detector finds the frozen rank before the watch would. In the Gloo world only the watch finds
# it, and the 30 s case would be the 3 s one waiting ten times longer.
@pytest.mark.parametrize("peer_timeout", [3, pytest.param(30, marks=MPI_ONLY)])
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
    assert "every rank left in place has exited (status 0); %s still waits for a lost one" % RUNNER in text, text
    if peer_timeout == 30:
        # ULFM's detector found it, whatever the survivors waited in (kolo's shared memory makes no MPI
        # call of itself), long before the watch would have.
        assert "sent no heartbeat" not in text, text
    print("frozen: training again %.3f s after the freeze" % seconds_to_recover(text))


# ULFM's detector off: a frozen rank is found by kolo's peer watch, but MPI never declares it failed, so
# the survivors' shrink would wait for it for good (as when a host is cut off and ULFM misses it). Given
# after ULFM's own options, it overrides them (the last --mca of a name wins).
NO_DETECTOR = ["--mca", "mpi_ft_detector", "false"]


@MPI_ONLY
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


@MPI_ONLY
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
    cmd = [str(BUILD / "bin" / "kolorun")] + WORLD_FLAGS + ["--in-place", "-np", "3", "--start-timeout", "15",
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
