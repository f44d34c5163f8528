"""One device_in_place job (tests/system/elastic_in_place/device_in_place.cc) under Open MPI 5's mpirun with ULFM, every
wait bounded, and what it showed: for tools/gpu/run_gpu_in_place.sh (the GPU machine) and the in-place
suite's reading of the program's lines. Python's standard library only.

    python3 device_in_place_job.py --mpirun M --program P [--device double|cuda] [--fault kill|freeze]
        [--ranks 3] [--steps 10] [--die-at 4] [--timeout 90] [--log FILE] [-x NAME ...]

Prints one line, "device_in_place cuda freeze: passed, training again 4.512 s after the loss (...)" or
"...: FAILED: why", and exits 0 when the job passed: rank 1 lost at --die-at, the others recovered in place
in the processes that started (by pid), every step from then on exact on one rank fewer, the survivors
agreeing on the device communicators shrunk (kolo's log: recover_in_place's INFO line; at least one with a
frozen peer, none or more with a killed one, whose end may break them), and the
survivors exited by themselves (a frozen rank is killed once they have: mpirun would wait for it
forever), all within --timeout.
"""
import argparse
import os
import re
import signal
import subprocess
import sys
import time

# ULFM's options, as the in-place suite's (tests/system/elastic_in_place/in_place_job.py): its failure detector finds a
# frozen process (a heartbeat each second, a suspect after 4 s without one).
ULFM = ["--with-ft", "ulfm", "--mca", "btl", "tcp,self", "--mca", "mpi_ft_detector", "true",
        "--mca", "mpi_ft_detector_period", "1", "--mca", "mpi_ft_detector_timeout", "4"]
# Every rank is on this host: MPI's TCP transport over the loopback device (it leaves lo out by default,
# and a machine without network may have nothing else); no binding to one core each (kolo's, NCCL's and
# CUDA's threads, and ULFM's heartbeats, beside the rank's own).
LOCAL = ["--mca", "btl_tcp_if_include", "lo", "--bind-to", "none"]
VICTIM = 1  # device_in_place's lost rank


def pids(text, word):
    # Not anchored to lines: mpirun may forward two ranks' lines as one.
    return {int(rank): int(pid) for rank, pid in re.findall(r"rank (\d+) of \d+ %s with pid (\d+)" % word, text)}


def fault_time(text):
    """When the victim raised its signal (its clock; one machine), or None if its line was lost."""
    m = re.search(r"rank \d+ of \d+: fault \w+ at ([\d.]+)", text)
    return float(m.group(1)) if m else None


def times(text, pattern):
    return [float(t) for t in re.findall(pattern, text)]


def seconds_to_train_again(text):
    """Seconds from the loss (the victim's signal) to the last survivor's first exact step after the
    recovery; None where a line is missing."""
    lost = fault_time(text)
    back = times(text, r"rank \d+ of \d+: training again: step \d+ exact at ([\d.]+)")
    if lost is None or not back:
        return None
    return max(back) - lost


def breakdown(text):
    """'ops failed +0.05 s, recovered +0.31 s' after the loss (the survivors' latest), or ''."""
    lost = fault_time(text)
    failed = times(text, r"rank \d+ of \d+: step \d+ failed at ([\d.]+)")
    recovered = times(text, r"step \d+ again \(recovered at ([\d.]+)\)")
    if lost is None or not failed or not recovered:
        return ""
    return "ops failed +%.3f s, recovered +%.3f s" % (max(failed) - lost, max(recovered) - lost)


def shrunk_counts(text):
    """The GPU communicators each survivor's recover_in_place shrank, in the order of kolo's INFO lines."""
    return [int(n) for n in re.findall(r"INFO: recovered in place: [^\n]*?(\d+) GPU communicator\(s\) shrunk", text)]


def problems(text, ranks, steps, die_at, must_shrink):
    """What the job's output lacks (an empty list: every check passed). `must_shrink`: every survivor shrank
    a device communicator; else the survivors agree on how many (none where a killed peer's end broke one:
    NCCL refuses to shrink a communicator that met an error, and kolo makes it anew)."""
    left = ranks - 1
    found = []
    started, ended = pids(text, "starts"), pids(text, "ends")
    if not started:
        said = [line for line in text.splitlines()[1:] if line.strip() and not line.startswith("# ")]
        return ["no rank started%s" % (": " + said[0] if said else "")]
    if len(started) != ranks:
        found.append("%d of %d ranks said they started" % (len(started), ranks))
    survivors = sorted(p for r, p in started.items() if r != VICTIM)
    if sorted(ended.values()) != survivors:
        found.append("the processes that ended (%s) are not the survivors that started (%s)"
                     % (sorted(ended.values()), survivors))
    for old in range(ranks):
        if old == VICTIM:
            continue
        new = old - (old > VICTIM)
        said = "rank %d of %d: in place now rank %d of %d, step %d again" % (old, ranks, new, left, die_at)
        if said not in text:
            found.append("missing: " + said)
    for step in range(die_at, steps):
        if "step %d on %d ranks: exact" % (step, left) not in text:
            found.append("missing: step %d on %d ranks: exact" % (step, left))
            break
    if len(times(text, r"training again: step \d+ exact at ([\d.]+)")) != left:
        found.append("not every survivor said it was training again")
    shrunk = shrunk_counts(text)
    if len(shrunk) != left or len(set(shrunk)) != 1:
        found.append("the survivors did not agree on the device communicators shrunk (kolo's log: %s)"
                     % (shrunk or "no recovery line"))
    elif must_shrink and shrunk[0] < 1:
        found.append("no survivor shrank a device communicator (kolo's log: %s)" % shrunk)
    for line in re.findall(r"[^\n]*could not be shrunk[^\n]*", text):
        found.append(line.strip())
    return found


def alive(pid):
    """Whether `pid` runs (a zombie does not)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def kill(pid):
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def run(args):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               KOLO_PEER_TIMEOUT_SECONDS=str(args.peer_timeout), KOLO_LOG_LEVEL="info")
    exported = ["KOLO_PEER_TIMEOUT_SECONDS", "KOLO_LOG_LEVEL"] + args.x
    cmd = [args.mpirun] + ULFM + LOCAL + ["-np", str(args.ranks), "--oversubscribe"]
    for name in exported:
        cmd += ["-x", name]
    cmd += [args.program, "--device", args.device, "--fault", args.fault, str(args.steps), str(args.die_at)]
    open(args.log, "w").close()
    log = open(args.log, "a+")  # appending: the job shares the offset that reading the log moves
    log.write("$ %s\n" % " ".join(cmd))
    log.flush()
    start = time.time()
    job = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    deadline = start + args.timeout
    notes = []
    exited_by_themselves = False
    ended_at = None
    text = ""

    def read():
        log.seek(0)
        return log.read()

    try:
        gone_at = None
        while time.time() < deadline and job.poll() is None:
            text = read()
            started = pids(text, "starts")
            survivors = [p for r, p in started.items() if r != VICTIM]
            if len(started) == args.ranks and not any(alive(p) for p in survivors):
                # Every survivor has exited (ended, or failed): the lost rank, if frozen, would keep
                # mpirun waiting forever.
                if alive(started[VICTIM]):
                    kill(started[VICTIM])
                    notes.append("the frozen rank killed once the others had exited")
                gone_at = gone_at or time.time()
                if time.time() - gone_at > 15:
                    notes.append("mpirun did not end within 15 s of its last rank")
                    break
            elif len(pids(text, "ends")) == args.ranks - 1:
                ended_at = ended_at or time.time()
                if time.time() - ended_at > args.exit_grace:
                    notes.append("the survivors did not exit within %.0f s of ending" % args.exit_grace)
                    break
            time.sleep(0.2)
    finally:
        text = read()
        if job.poll() is None:
            notes.append("mpirun had not ended after %.0f s: ended" % (time.time() - start))
        started = pids(text, "starts")
        running = [p for r, p in started.items() if r != VICTIM and alive(p)]
        exited_by_themselves = len(pids(text, "ends")) == args.ranks - 1 and not running
        for pid in started.values():
            if alive(pid):
                kill(pid)
        if job.poll() is None:
            try:
                os.killpg(job.pid, signal.SIGKILL)  # mpirun's own session (start_new_session)
            except ProcessLookupError:
                pass
        try:
            job.wait(timeout=10)
        except subprocess.TimeoutExpired:
            notes.append("mpirun (pid %d) did not end even when killed" % job.pid)
        log.write("\n# device_in_place_job: mpirun exit status %s after %.1f s%s\n"
                  % (job.returncode, time.time() - start, "; " + "; ".join(notes) if notes else ""))
        log.close()
    # A frozen peer breaks no NCCL communicator (it stays connected, silent): the survivors shrink theirs.
    found = problems(text, args.ranks, args.steps, args.die_at, must_shrink=args.fault == "freeze")
    if not pids(text, "starts"):
        pass  # nothing more to say
    elif not exited_by_themselves:
        found.append("the survivors did not exit by themselves")
    if args.fault == "kill" and job.returncode != 0:
        found.append("mpirun exited with status %s" % job.returncode)
    seconds = seconds_to_train_again(text)
    again = ("training again %.3f s after the loss" % seconds if seconds is not None
             else "training again ? s after the loss (a time line is missing)")
    shrunk = shrunk_counts(text)
    facts = [f for f in [breakdown(text),
                         "GPU communicators shrunk per survivor: %s" % ",".join(map(str, shrunk))
                         if shrunk else "", "job %.1f s" % (time.time() - start)] if f]
    name = "device_in_place %s %s" % (args.device, args.fault)
    if found:
        print("%s: FAILED: %s; %s (%s); log %s" % (name, "; ".join(found), again, ", ".join(facts), args.log))
        return 1
    print("%s: passed, %s (%s)" % (name, again, ", ".join(facts)))
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mpirun", required=True, help="Open MPI 5's mpirun")
    p.add_argument("--program", required=True, help="the device_in_place binary")
    p.add_argument("--device", choices=["double", "cuda"], default="double")
    p.add_argument("--fault", choices=["kill", "freeze"], default="kill")
    p.add_argument("--ranks", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--die-at", type=int, default=4)
    p.add_argument("--timeout", type=float, default=90, help="seconds for the whole job")
    p.add_argument("--exit-grace", type=float, default=15, help="seconds the survivors have to exit after ending")
    p.add_argument("--peer-timeout", type=float, default=3, help="KOLO_PEER_TIMEOUT_SECONDS")
    p.add_argument("--log", default="device_in_place.log")
    p.add_argument("-x", action="append", default=[], help="another environment variable for the ranks")
    args = p.parse_args(argv)
    # `timeout` ends this with SIGTERM: the job's processes are ended on the way out (run's finally).
    signal.signal(signal.SIGTERM, lambda number, frame: sys.exit(128 + number))
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
