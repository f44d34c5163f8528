#!/usr/bin/env python3
"""Runs any elastic program under `kolorun --in-place` again and again, one fault per run at a random
moment, and says how each run ended: recovered in place, restarted, crashed, hung (past --bound), or left
a process behind.

    KOLO_MPIRUN=.venv-ompi5/bin/mpirun tools/elastic/fault_a_job.py --runs 20 --fault freeze \\
        --after "Running benchmark" -- python3 pytorch_synthetic_benchmark_elastic.py --model resnet18 --no-cuda ...

The victim is a random rank other than 0 (--any-rank: any), struck 0 to --delay s after the job printed
--after (or after its start). Runs alternate the worlds of --worlds (mpi: ULFM, build-ulfm's kolorun; gloo:
kolorun --gloo of build/), then the faults, then the peer timeouts of --peer-timeouts ("default": kolo's
own); the summary gives each combination's recoveries.
"""
import argparse
import os
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "system" / "elastic"))
import chaos  # noqa: E402

IN_PLACE = re.compile(r"kolo\.elastic: in place: now rank 0 of (\d+)")


def descendants(root):
    """Every process under `root` (pid), from /proc."""
    children = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        for c in children.get(todo.pop(), []):
            found.append(c)
            todo.append(c)
    return found


def world_rank(pid):
    try:
        with open("/proc/%d/environ" % pid, "rb") as f:
            for item in f.read().split(b"\0"):
                if item.startswith(b"OMPI_COMM_WORLD_RANK=") or item.startswith(b"RANK="):
                    return int(item.split(b"=", 1)[1])
    except (OSError, ValueError):
        pass
    return None


def one_run(args, command, n, world, peer_timeout, fault, log_path):
    env = dict(os.environ)
    build = Path(args.gloo_build if world == "gloo" else args.mpi_build).resolve()
    env["PYTHONPATH"] = str(build / "python")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    env.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
    if peer_timeout == "default":
        env.pop("KOLO_PEER_TIMEOUT_SECONDS", None)
    else:
        env["KOLO_PEER_TIMEOUT_SECONDS"] = peer_timeout
    kolorun = [str(build / "bin" / "kolorun")] + (["--gloo"] if world == "gloo" else [])
    started = time.time()
    with open(log_path, "w+") as log:
        job = subprocess.Popen(kolorun + ["--in-place", "-np", str(args.np), *command], stdout=log,
                               stderr=subprocess.STDOUT, env=env, start_new_session=True)
        while args.after and time.time() - started < args.bound and job.poll() is None:
            log.seek(0)
            if args.after in log.read():
                break
            time.sleep(0.05)
        time.sleep(random.uniform(0, args.delay))
        ranks = {world_rank(p): p for p in descendants(job.pid)}
        ranks.pop(None, None)
        choices = sorted(r for r in ranks if args.any_rank or r != 0)
        victim_rank = random.choice(choices) if choices and job.poll() is None else None
        victim = None if victim_rank is None else ranks[victim_rank]
        struck_at = time.time()
        if victim:
            os.kill(victim, signal.SIGSTOP if fault == "freeze" else signal.SIGKILL)
        back_at = None
        while job.poll() is None and time.time() - started < args.bound:
            if back_at is None:
                log.seek(0)
                if IN_PLACE.search(log.read()):
                    back_at = time.time()
            time.sleep(0.05)
        hung = job.poll() is None
        everything = descendants(job.pid)
        if hung:
            os.killpg(job.pid, signal.SIGKILL)
            job.wait()
        time.sleep(1)
        left = [p for p in everything if chaos.running(p)]
        for p in left + ([victim] if victim else []):
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
        log.seek(0)
        text = log.read()
    crash = chaos.CRASH.search(text)
    restarts = text.count("kolorun: attempt ")
    in_place = IN_PLACE.search(text)
    if victim is None:
        outcome = "no fault (the job ended first)"
    elif hung:
        outcome = "HUNG (past %d s)" % args.bound
    elif crash:
        outcome = "CRASH (%s)" % crash.group(0)
    elif restarts:
        outcome = "RESTARTED (%d)" % restarts
    elif job.returncode != 0:
        outcome = "FAILED (status %d)" % job.returncode
    elif in_place and not left:
        outcome = "recovered in place"
    else:
        outcome = "ended, not in place" if not left else "LEFT %d process(es)" % len(left)
    took = "" if back_at is None or victim is None else ", in place %.1f s after the fault" % (back_at - struck_at)
    print("run %d, %s world: %s of rank %s at %.1f s, peer timeout %s: %s%s (%.0f s in all)"
          % (n, world, fault, victim_rank, struck_at - started, peer_timeout, outcome, took, time.time() - started),
          flush=True)
    return outcome, None if back_at is None or victim is None else back_at - struck_at


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--np", type=int, default=3)
    parser.add_argument("--fault", choices=["kill", "freeze", "both"], default="both")
    parser.add_argument("--after", default="", help="strike only after the job printed this")
    parser.add_argument("--delay", type=float, default=10.0, help="strike within this many seconds of --after")
    parser.add_argument("--peer-timeouts", default="5,default")
    parser.add_argument("--bound", type=int, default=300, help="a run past this many seconds has hung")
    parser.add_argument("--any-rank", action="store_true")
    parser.add_argument("--worlds", default="mpi", help="mpi, gloo or mpi,gloo (alternated)")
    parser.add_argument("--mpi-build", default=str(ROOT / "build-ulfm"), help="the MPI world's (ULFM) build")
    parser.add_argument("--gloo-build", default=str(ROOT / "build"), help="the Gloo world's build")
    parser.add_argument("--logs", default="/tmp/fault_a_job", help="each run's output goes here")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no program to run (after --)")
    random.seed(args.seed)
    os.makedirs(args.logs, exist_ok=True)
    timeouts = args.peer_timeouts.split(",")
    faults = ["kill", "freeze"] if args.fault == "both" else [args.fault]
    worlds = args.worlds.split(",")
    runs = {}
    for n in range(1, args.runs + 1):
        world = worlds[(n - 1) % len(worlds)]
        fault = faults[((n - 1) // len(worlds)) % len(faults)]
        timeout = timeouts[((n - 1) // (len(worlds) * len(faults))) % len(timeouts)]
        log = os.path.join(args.logs, "run%d.log" % n)
        runs.setdefault((world, fault, timeout), []).append(one_run(args, command, n, world, timeout, fault, log))
    print("# seconds from the fault to \"in place: now rank 0 of N\" (min / median / max)")
    good = total = 0
    for (world, fault, timeout), outcomes in runs.items():
        took = sorted(t for o, t in outcomes if o == "recovered in place" and t is not None)
        ok = sum(o == "recovered in place" for o, _ in outcomes)
        good, total = good + ok, total + len(outcomes)
        spread = " / ".join("%.1f" % t for t in (took[0], took[len(took) // 2], took[-1])) if took else "-"
        print("%-6s %-7s peer timeout %-8s %3d of %-3d in place   %s" % (world, fault, timeout, ok, len(outcomes), spread))
    print("%d of %d runs recovered in place; logs in %s" % (good, total, args.logs))
    return 0 if good == total else 1

if __name__ == "__main__":
    sys.exit(main())
