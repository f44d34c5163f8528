"""Elastic training of a small float64 classifier on scikit-learn's 8x8 digits, in Horovod's elastic
shape (the program the elastic tests run under kolorun; see test_elastic.py).

Per-rank batches of --batch-size from an ElasticSampler, a commit every --commit-every steps; the optimizer's
state sharded with --zero-stage 1 or 2. A test
hook, from the environment: ELASTIC_TEST_EVENT="ATTEMPT:RANK:STEP:ACTION" makes that rank, before that
step of that attempt, write ELASTIC_TEST_HOSTS_AFTER ("host:slots,...") into ELASTIC_TEST_HOSTS_FILE, a
line each (what the discovery script prints) and then, for ACTION
- "die", SIGKILL itself (its host "goes away");
- "freeze", SIGSTOP itself (frozen: kolo's peer watch finds it);
- "cut", take its host's link down for good (emulated hosts only);
- "die-in-recovery", SIGKILL itself when a peer's failure next reaches it (while the others recover:
  before the shrink); "die-in-sync", in the recovery's sync (after the shrink);
- "die-in-commit", halfway through writing its next commit for its host (a local rank 0);
- "grow", only write the hosts.
Several events: ";" between them, and between their hosts after. ELASTIC_TEST_FREEZE_AT_START,
ELASTIC_TEST_STEP_SECONDS and ELASTIC_TEST_PRINT_STEPS: below.
Every rank prints its pid at the start and the end (in place, the survivors' are the same); rank 0 prints
where each attempt (or, in place, each recovery) starts; at the end it saves the weights to --out and
prints the test accuracy."""
import argparse
import os
import signal
import subprocess
import sys
import time

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import kolo.torch as hvd

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=6)
parser.add_argument("--batch-size", type=int, default=16)
parser.add_argument("--commit-every", type=int, default=4)
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--out", required=True)
parser.add_argument("--zero-stage", type=int, default=0, help="DistributedOptimizer's: 1 or 2 shards its state")
args = parser.parse_args()

# ELASTIC_TEST_FREEZE_AT_START="ATTEMPT:RANK": that rank of that attempt SIGSTOPs itself before init(),
# printing its pid first; the others then wait inside the world's start-up (MPI's, or the Gloo world's
# rendezvous; kolorun's --start-timeout).
freeze_at_start = os.environ.get("ELASTIC_TEST_FREEZE_AT_START", "").split(":")
launcher_rank = os.environ.get("OMPI_COMM_WORLD_RANK", os.environ.get("RANK"))
if freeze_at_start == [os.environ.get("KOLO_ELASTIC_ATTEMPT", "0"), launcher_rank]:
    print("frozen at start with pid %d" % os.getpid(), flush=True)
    os.kill(os.getpid(), signal.SIGSTOP)
hvd.init()
torch.set_num_threads(1)
digits = load_digits()
x = torch.tensor(digits.images, dtype=torch.float64).reshape(-1, 64) / 16.0
y = torch.tensor(digits.target, dtype=torch.int64)
x_train, x_test, y_train, y_test = train_test_split(x, y, test_size=0.2, random_state=0)

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10)).double()
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
sampler = hvd.elastic.ElasticSampler(range(len(x_train)), shuffle=True, seed=1)
optimizer = hvd.DistributedOptimizer(optimizer, named_parameters=model.named_parameters(), zero_stage=args.zero_stage)
# Events, ";"-separated, each with its hosts after (ELASTIC_TEST_HOSTS_AFTER, ";"-separated likewise).
events = [e.split(":") for e in os.environ.get("ELASTIC_TEST_EVENT", "").split(";") if e]
hosts_after = os.environ.get("ELASTIC_TEST_HOSTS_AFTER", "").split(";")
attempt = int(os.environ.get("KOLO_ELASTIC_ATTEMPT", "0"))
dies_in_recovery = None  # when, for the die-in-* events
# ELASTIC_TEST_STEP_SECONDS: a pause in every step, so that a chaos test's faults land mid-training.
step_seconds = float(os.environ.get("ELASTIC_TEST_STEP_SECONDS", "0"))
# ELASTIC_TEST_PRINT_STEPS=1: rank 0 says each step it starts (tools/elastic/chaos_soak.py's lost work).
print_steps = os.environ.get("ELASTIC_TEST_PRINT_STEPS") == "1"


def test_event(step):
    for event, hosts in zip(events, hosts_after):
        if len(event) != 4 or [int(v) for v in event[:3]] != [attempt, hvd.rank(), step]:
            continue
        with open(os.environ["ELASTIC_TEST_HOSTS_FILE"], "w") as f:
            f.write(hosts.replace(",", "\n") + "\n")
        print("event %s at %.3f" % (event[3], time.time()), flush=True)
        if event[3] in ("die", "freeze"):
            os.kill(os.getpid(), signal.SIGKILL if event[3] == "die" else signal.SIGSTOP)
        if event[3] == "grow":
            # The job must still run when kolorun's discovery sees the new slot and signals it (a fast
            # machine can end 6 epochs of digits first): this rank waits for the signal, the others in
            # their next allreduce.
            from kolo.elastic import runner
            deadline = time.time() + 30
            while not runner._hosts_changed and time.time() < deadline:
                time.sleep(0.05)
        if event[3] == "die-in-commit":
            die_in_commit()
        if event[3] in ("die-in-recovery", "die-in-sync"):
            global dies_in_recovery
            dies_in_recovery = event[3]
        if event[3] == "cut":  # the host's link goes down for good (an emulated host: its own eth0)
            time.sleep(0.5)  # the line above, forwarded by mpirun's daemon, gets out first
            subprocess.run(["ip", "link", "set", "eth0", "down"], check=True)


def die_in_commit():
    """The next commit this rank keeps for its host (local rank 0) writes half its payload, then the rank
    SIGKILLs itself: the host is left a commit cut short."""
    dump = state.serialize

    def dying(f):
        import io
        whole = io.BytesIO()
        dump(whole)
        f.write(whole.getvalue()[:len(whole.getvalue()) // 2])
        f.flush()
        print("dies in its commit at %.3f" % time.time(), flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    state.serialize = dying


@hvd.elastic.run
def train(state):
    try:
        train_from(state)
    except hvd.elastic.PeersFailedError:
        # The others are recovering from the failure too: they lose this rank meanwhile.
        if dies_in_recovery == "die-in-recovery":
            os.kill(os.getpid(), signal.SIGKILL)
        if dies_in_recovery == "die-in-sync":
            state.sync = lambda: os.kill(os.getpid(), signal.SIGKILL)
        raise


def train_from(state):
    if hvd.rank() == 0:
        print("attempt %d starts at step %d on %d ranks at %.3f" % (attempt, state.step, hvd.size(), time.time()),
              flush=True)
    while state.epoch < args.epochs:
        indices = list(iter(sampler))
        for start in range(0, len(indices), args.batch_size):
            test_event(state.step)
            if step_seconds:
                time.sleep(step_seconds)
            if print_steps and hvd.rank() == 0:
                print("step %d at %.3f" % (state.step, time.time()), flush=True)
            batch = torch.tensor(indices[start:start + args.batch_size])
            optimizer.zero_grad()
            F.cross_entropy(model(x_train[batch]), y_train[batch]).backward()
            optimizer.step()
            sampler.record_batch(start // args.batch_size, args.batch_size)
            state.step += 1
            if state.step % args.commit_every == 0:
                state.commit()
        state.epoch += 1
        sampler.set_epoch(state.epoch)
        state.commit()


state = hvd.elastic.TorchState(model, optimizer, sampler=sampler, epoch=0, step=0)
print("rank %d of %d starts with pid %d" % (hvd.rank(), hvd.size(), os.getpid()), flush=True)
train(state)
print("rank %d of %d ends with pid %d" % (hvd.rank(), hvd.size(), os.getpid()), flush=True)
if hvd.rank() == 0:
    torch.save(model.state_dict(), args.out)
    accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    print("ranks %d  steps %d  test accuracy %.4f" % (hvd.size(), state.step, accuracy), flush=True)
sys.exit(0)
