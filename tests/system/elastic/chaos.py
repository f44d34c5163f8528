"""A chaos monkey for an elastic job of elastic_digits.py: random faults at random moments, read off the
job's output, and what each cost.

The job's output is a file that grows (the job writes it); this module reads it and never writes it.
Each fault waits until the job trains again after the last (a new "attempt A starts at step S on N ranks"
line), then a random time, then strikes a random live rank process:
  kill      SIGKILL;
  freeze    SIGSTOP (alive but silent: kolo's peer watch or ULFM's detector finds it);
  double    SIGKILL, then a second process 0.05-1 s later: the second falls inside the recovery from the
            first (or just before it);
  cut       on emulated hosts (tests/system/cluster/cluster.sh: network namespaces), the victim's host's link goes
            down for good: its ranks are alive but out of reach (needs root).
A fault during a commit is scheduled inside the program instead (its ELASTIC_TEST_EVENT "die-in-commit").
The same seed gives the same kinds, victims' places and delays; the job decides the rest.

The schedule of sizes the job followed comes from the same lines, for the one-process reference
(test_elastic.reference). Used by tests/system/elastic_in_place/test_chaos.py,
tests/system/elastic/test_chaos_restart.py and tools/elastic/chaos_soak.py.
"""
import os
import random
import re
import signal
import subprocess
import time

# Not anchored to lines: mpirun may forward two ranks' lines (or a rank's stdout and stderr) as one.
STARTS = re.compile(r"attempt (\d+) starts at step (\d+) on (\d+) ranks at (\d+\.\d{3})")
PIDS = re.compile(r"rank (\d+) of (\d+) starts with pid (\d+)")
# What must never appear in a soak's output: a crash, an abort, a rank declared dead while alive. (mpirun's
# report of a rank the chaos killed, "exited on signal 9", or that kolorun ended, 15, is expected.)
CRASH = re.compile(r"Segmentation fault|Signal: |exited on signal (?!9\b|15\b)\d+|MPI_ABORT was invoked|"
                   r"core dumped|terminate called|reported dead by someone else|double free|corrupted", re.I)


def host_of(pid):
    """The network namespace (emulated host) the process runs in, or None on this machine's own."""
    run = subprocess.run(["ip", "netns", "identify", str(pid)], capture_output=True, text=True)
    return run.stdout.strip() or None


def cut_link(host):
    """Takes an emulated host's link down for good (its eth0, in its namespace)."""
    subprocess.run(["ip", "netns", "exec", host, "ip", "link", "set", "eth0", "down"], check=True)


def state_of(pid):
    """The process's state letter from /proc (R, S, T for stopped, Z...), or None if it is gone."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return None


def running(pid):
    """Whether the process exists and is not a zombie (stopped counts: it is left behind)."""
    s = state_of(pid)
    return s is not None and s != "Z"


STEP = re.compile(r"step (\d+) at (\d+\.\d{3})")


def steps_redone(text, fault):
    """How many steps the job did again after `fault`: the last step rank 0 started before it (its
    ELASTIC_TEST_PRINT_STEPS lines) less the step it went on from; None without those lines."""
    started = [int(step) for step, at in STEP.findall(text) if float(at) < fault.at]
    if not started or fault.step is None:
        return None
    return max(0, started[-1] - fault.step)


def schedule_of(text):
    """[(steps, size), ..., (None, size)] from the job's "starts" lines: each recovery (in place) or
    attempt (restart) goes on from its step on its ranks."""
    starts = [(int(step), int(size)) for _, step, size, _ in STARTS.findall(text)]
    schedule = []
    for (_, size), (step, _) in zip(starts, starts[1:]):
        schedule.append((step, size))
    return schedule + [(None, starts[-1][1])] if starts else []


class Fault:
    def __init__(self, kind, victims, at):
        self.kind, self.victims, self.at = kind, victims, at
        self.recovered_at = None  # wall time of the next "starts" line
        self.step = None          # the step the job went on from
        self.ended_first = False  # the job ended (well or not: the caller checks) before training again

    def seconds(self):
        return None if self.recovered_at is None else self.recovered_at - self.at

    def describe(self):
        took = "training again after %.2f s" % self.seconds() if self.recovered_at is not None else \
            "the job ended first" if self.ended_first else "not recovered"
        return "%s of pid %s: %s, from step %s" % (self.kind, "+".join(map(str, self.victims)), took, self.step)


class Chaos:
    """Strikes `count` faults of `kinds` into the job writing `log_path`, one after the other, each
    0.5-`max_gap` s after the job trains again; each must be recovered from within `recover_seconds`."""

    def __init__(self, log_path, seed, count, kinds=("kill", "freeze", "double"), max_gap=4.0, recover_seconds=90,
                 ranks_left=1, after=None):
        self.log_path = log_path
        self.seed = seed
        self.rng = random.Random(seed)
        self.left_behind = []  # rank processes still there after the job (the caller fills it)
        self.count = count
        self.kinds = kinds
        self.max_gap = max_gap
        self.recover_seconds = recover_seconds
        self.ranks_left = ranks_left  # never strike a job down to fewer ranks than this
        # A fault the program strikes itself, "<words> at <wall time>": the first strike waits for the job to
        # train again after it (so that the sizes this reads are not about to change).
        self.after = after
        self.faults = []
        self.struck = set()  # pids killed or frozen
        self.error = None

    def text(self):
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def live(self, text):
        """The rank processes alive now and not struck, in the order they started."""
        seen = []
        for _, _, pid in PIDS.findall(text):
            pid = int(pid)
            if pid not in seen and pid not in self.struck and state_of(pid) in ("R", "S", "D"):
                seen.append(pid)
        return seen

    def wait_for_starts(self, after, job, deadline):
        """Waits for a "starts" line printed after wall time `after`; its (step, size, wall time), or None
        when the job ended or the deadline passed first."""
        while time.time() < deadline:
            for _, step, size, at in STARTS.findall(self.text()):
                if float(at) > after:
                    return int(step), int(size), float(at)
            if job.poll() is not None:
                return None
            time.sleep(0.05)
        return None

    def run(self, job):
        """Strikes the faults while `job` (a Popen) runs; returns when they are all recovered from, the job
        ended, or one was not recovered from in time (self.error says which)."""
        first = self.wait_for_starts(0, job, time.time() + 120)
        if first is None:
            self.error = "the job never started training"
            return
        if self.after:
            deadline = time.time() + 120
            while self.after not in self.text() and time.time() < deadline and job.poll() is None:
                time.sleep(0.05)
            said = re.search(re.escape(self.after) + r" at ([\d.]+)", self.text())
            first = self.wait_for_starts(float(said.group(1)), job, deadline) if said else None
            if first is None:
                self.error = "the job did not train again after %r" % self.after
                return
        size = first[1]
        for _ in range(self.count):
            kind = self.rng.choice(self.kinds)
            losing = 2 if kind == "double" else 1
            if size - losing < self.ranks_left:
                kind, losing = "kill", 1
            if size - losing < self.ranks_left:
                break
            time.sleep(self.rng.uniform(0.5, self.max_gap))
            live = self.live(self.text())
            if len(live) < losing or job.poll() is not None:
                break
            victims = self.rng.sample(live, losing)
            if kind == "cut":  # every rank on the victim's host
                host = host_of(victims[0])
                victims = [pid for pid in live if host_of(pid) == host]
                if host is None or size - len(victims) < self.ranks_left:
                    break
            fault = Fault(kind, victims, time.time())
            if kind == "cut":
                cut_link(host)
            else:
                os.kill(victims[0], signal.SIGSTOP if kind == "freeze" else signal.SIGKILL)
            if kind == "double":
                time.sleep(self.rng.uniform(0.05, 1.0))
                try:
                    os.kill(victims[1], signal.SIGKILL)
                except ProcessLookupError:
                    # Gone before its turn: check() reads from the output whatever ended it.
                    fault.kind = "kill"
                    fault.victims = victims = victims[:1]
            self.struck.update(victims)
            self.faults.append(fault)
            # Recovered once the job trains again after the last strike (a second failure during a recovery
            # may or may not make a line of its own).
            back = self.wait_for_starts(time.time(), job, fault.at + self.recover_seconds)
            if back is None:
                if job.poll() is None:
                    self.error = "%s: not training again within %d s" % (fault.describe(), self.recover_seconds)
                else:
                    fault.ended_first = True  # struck in its last steps, or it failed: its status says
                return
            fault.step, size, fault.recovered_at = back

    def end(self, text):
        """After the job: notes every rank process of `text` still there (self.left_behind; a soak fails on
        any) and kills them, struck or not."""
        time.sleep(2)  # mpirun's daemons reap what they ended
        self.left_behind = [int(p) for _, _, p in PIDS.findall(text) if running(int(p))]
        for pid in set(self.left_behind) | self.struck:
            if running(pid):
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def report(self):
        return "chaos seed %d:\n%s" % (self.seed, "\n".join(f.describe() for f in self.faults))

    def check(self, text, returncode, out, epochs):
        """What a soak asserts: no chaos error, the job's success, every fault struck and recovered from, no
        crash in its output, nothing left behind, and the reference's weights for the job's schedule."""
        from test_elastic import assert_same_weights, reference
        print(self.report())
        # Each message's first line says what failed (a soak prints only that line); the output follows.
        assert self.error is None, self.error + "\n" + text
        assert returncode == 0, "the job ended with status %s\n%s" % (returncode, text)
        # A fault struck in the job's last steps may meet no more training: the job's status and weights
        # say whether it was survived.
        assert len(self.faults) == self.count, "%d faults struck of %d\n%s\n%s" % (
            len(self.faults), self.count, self.report(), text)
        unrecovered = [f.describe() for f in self.faults if f.recovered_at is None and not f.ended_first]
        assert not unrecovered, "no training again after: %s\n%s\n%s" % ("; ".join(unrecovered), self.report(), text)
        crash = CRASH.search(text)
        assert crash is None, "%r in:\n%s" % (crash.group(0), text)
        assert self.left_behind == [], "left behind: %s\n%s" % (self.left_behind, text)
        weights, _ = reference(schedule_of(text), epochs)
        assert_same_weights(out, weights)
