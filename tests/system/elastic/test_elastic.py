"""Elastic training on the restart path (any MPI): kolorun in elastic mode, kolo.torch.elastic.

A 3-rank job loses rank 2 (SIGKILL, and its "host" leaves the discovery script's list) mid-epoch; kolorun
starts the job again on the 2 slots left, the ranks resume from the last commit kept in memory, and the
job ends with the weights of a one-process reference that follows the same schedule (3 ranks up to that
commit, 2 after) and a test accuracy of at least 96%.

Run by ctest (elastic_restart, which sets KOLO_BUILD_DIR), or:
KOLO_BUILD_DIR=build python3 -m pytest tests/system/elastic
"""
import re
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from kolorun_job import BUILD, run_elastic_job

PROGRAM = str(Path(__file__).resolve().parent / "elastic_digits.py")
sys.path.insert(0, str(BUILD / "python"))

pytestmark = pytest.mark.skipif(not (BUILD / "python" / "kolo").exists(), reason="kolo's Python package was not built")

EPOCHS, BATCH, COMMIT_EVERY, LR, HIDDEN = 6, 16, 4, 0.1, 128  # HIDDEN: as elastic_digits.py


def run_job(tmp_path, hosts, event=None, hosts_after=None, peer_timeout=30, program_args=()):
    env = dict(ELASTIC_TEST_EVENT=event, ELASTIC_TEST_HOSTS_AFTER=hosts_after) if event else {}
    out = tmp_path / "weights.pt"
    command = [sys.executable, PROGRAM, "--epochs", str(EPOCHS), "--batch-size", str(BATCH),
               "--commit-every", str(COMMIT_EVERY), "--lr", str(LR), "--out", str(out), *program_args]
    return run_elastic_job(tmp_path, hosts, command, env, peer_timeout), out


class Placed:
    """ElasticSampler's partition at a given size and rank, without a job (for the reference)."""

    def __init__(self, size, rank):
        from kolo.torch.elastic import ElasticSampler

        class Sampler(ElasticSampler):
            def _place(s):
                return size, rank
        self.Sampler = Sampler


def digits_split():
    """elastic_digits.py's data: (x_train, x_test, y_train, y_test)."""
    from sklearn.datasets import load_digits
    from sklearn.model_selection import train_test_split
    digits = load_digits()
    x = torch.tensor(digits.images, dtype=torch.float64).reshape(-1, 64) / 16.0
    y = torch.tensor(digits.target, dtype=torch.int64)
    return train_test_split(x, y, test_size=0.2, random_state=0)


def schedule_steps(schedule, train, epochs=EPOCHS):
    """The job's steps under `schedule` ([(steps, size), ...], the last running to the end) as its
    ElasticSamplers deal `train` samples: for each step, every rank's batch (sample indices) and whether
    the step ends an epoch."""
    sampler_state = {"epoch": 0, "processed_num": 0}
    epoch, step = 0, 0
    for until, size in schedule:
        samplers = [Placed(size, r).Sampler(range(train), shuffle=True, seed=1) for r in range(size)]
        for s in samplers:
            s.load_state_dict(sampler_state)
        while epoch < epochs and step != until:
            shares = [list(iter(s)) for s in samplers]
            start = 0
            while start < len(shares[0]) and step != until:
                batches = [sh[start:start + BATCH] for sh in shares]
                for s in samplers:
                    s.record_batch(0, BATCH)
                start += BATCH
                step += 1
                yield batches, start >= len(shares[0])
            if step == until and start < len(shares[0]):
                break
            epoch += 1
            for s in samplers:
                s.set_epoch(epoch)
        sampler_state = samplers[0].state_dict()


def is_commit_step(step, schedule):
    """Whether elastic_digits.py commits after `step` under `schedule`: every COMMIT_EVERY steps, and at
    each epoch's end."""
    if step % COMMIT_EVERY == 0:
        return True
    ends = [n for n, (_, end) in enumerate(schedule_steps(schedule, len(digits_split()[0])), 1) if end]
    return step in ends


def reference(schedule, epochs=EPOCHS):
    """One process following the job's schedule: [(steps, size), ...], the last running to the end.
    Each step averages the ranks' mean-loss gradients, as DistributedOptimizer does."""
    x_train, x_test, y_train, y_test = digits_split()
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, HIDDEN), torch.nn.ReLU(), torch.nn.Linear(HIDDEN, 10)).double()
    optimizer = torch.optim.SGD(model.parameters(), lr=LR, momentum=0.9)
    for batches, _ in schedule_steps(schedule, len(x_train), epochs):
        optimizer.zero_grad()
        loss = sum(F.cross_entropy(model(x_train[torch.tensor(b)]), y_train[torch.tensor(b)]) for b in batches)
        (loss / len(batches)).backward()
        optimizer.step()
    accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    return model.state_dict(), accuracy


def final_word(stdout):
    """Rank 0's last word: (the rank count, steps, test accuracy). Found in the text, not by line: mpirun
    forwards each rank's output as it comes, and another rank's line once came glued to the end of this one
    ("... test accuracy 0.9667rank 1 of 2 ends with pid 4896")."""
    said = re.findall(r"ranks (\d+)  steps (\d+)  test accuracy (\d+\.\d{4})", stdout)
    assert said, stdout
    size, steps, accuracy = said[-1]
    return int(size), int(steps), float(accuracy)


def assert_same_weights(path, expected):
    # float64: the job's sums at 3 ranks round in MPI's order, the reference's in its own; in float32
    # such differences can grow through training to 1e-3 in some runs, in float64 they stay far below this.
    got = torch.load(path)
    for name, value in expected.items():
        torch.testing.assert_close(got[name], value, rtol=0, atol=1e-9)


@pytest.mark.parametrize("zero_stage", [0, 2])
def test_a_killed_rank_is_cut_out_and_training_resumes_from_the_last_commit(tmp_path, zero_stage):
    # Rank 2 dies before step 10; the last commit was at step 8: steps 8 and 9 are done again on 2 ranks.
    # With the optimizer's state sharded, the commit a host kept holds it whole, cut into 2 ranks' shards.
    job, out = run_job(tmp_path, "localhost:3", event="0:2:10:die", hosts_after="localhost:2",
                       program_args=["--zero-stage", str(zero_stage)])
    assert job.returncode == 0, job.stdout + job.stderr
    assert "attempt 1 on 2 ranks resumes from commit 1" in job.stderr, job.stderr
    assert "attempt 1 starts at step 8 on 2 ranks at " in job.stdout
    assert "restarting from the last commit" in job.stderr
    weights, accuracy = reference([(8, 3), (None, 2)])
    assert_same_weights(out, weights)
    size, _, final_accuracy = final_word(job.stdout)
    assert size == 2 and final_accuracy == pytest.approx(accuracy, abs=2e-3)
    assert accuracy >= 0.96
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("kolo-elastic-")]  # the commits went at the end


def test_a_frozen_rank_is_found_by_the_peer_watch_and_cut_out_the_same_way(tmp_path):
    # SIGSTOP: the process lives but answers nothing; the others' peer watch (3 s here) ends the attempt.
    job, out = run_job(tmp_path, "localhost:3", event="0:2:10:freeze", hosts_after="localhost:2", peer_timeout=3)
    assert job.returncode == 0, job.stdout + job.stderr
    assert "sent no heartbeat" in job.stderr and "attempt 1 on 2 ranks resumes from commit 1" in job.stderr, job.stderr
    weights, _ = reference([(8, 3), (None, 2)])
    assert_same_weights(out, weights)


def test_without_a_failure_the_job_equals_the_reference(tmp_path):
    job, out = run_job(tmp_path, "localhost:2")
    assert job.returncode == 0, job.stdout + job.stderr
    assert "resumes" not in job.stderr
    weights, _ = reference([(None, 2)])
    assert_same_weights(out, weights)


def test_a_host_added_joins_at_the_next_commit(tmp_path):
    # Rank 0 adds a slot to what the discovery script prints at step 6; kolorun signals the job, the
    # ranks agree at a commit, and the job goes on from it on 3 ranks: a planned restart, no reset.
    job, out = run_job(tmp_path, "localhost:2", event="0:0:6:grow", hosts_after="localhost:3")
    assert job.returncode == 0, job.stdout + job.stderr
    assert "a planned restart" in job.stderr and "restarting from the last commit" not in job.stderr, job.stderr
    started = re.findall(r"attempt 1 starts at step (\d+) on (\d+) ranks at ", job.stdout)  # (final_word's why)
    assert len(started) == 1 and started[0][1] == "3", job.stdout
    step = int(started[0][0])
    assert step >= 8 and is_commit_step(step, [(None, 2)])  # the first commit after the signal, or a later one
    weights, accuracy = reference([(step, 2), (None, 3)])
    assert_same_weights(out, weights)
    assert final_word(job.stdout)[0] == 3
