#!/usr/bin/env python3
"""Longer chaos soaks than the test suite's (tests/system/elastic_in_place/test_chaos.py,
tests/system/elastic/test_chaos_restart.py):
--jobs digits jobs, each taking --faults random faults (and a death inside a commit), in place under Open MPI
5's ULFM or by restart under the default build's MPI. Each job is checked as the tests check it (every fault
recovered from, no crash, nothing left behind, the reference's weights); then what the faults cost:

    tools/elastic/chaos_soak.py --mode in-place --jobs 10 --faults 5 --ranks 12
    tools/elastic/chaos_soak.py --mode restart --jobs 5 --faults 4
    tools/elastic/chaos_soak.py --hosts 6 --faults 2 --kinds cut,kill,double    # emulated hosts, as root

Builds: build-ulfm/ (tests/elastic_in_place.sh) for in place, build/ for restart; KOLO_ULFM_BUILD_DIR, KOLO_ULFM_MPIRUN
and KOLO_BUILD_DIR choose others.
"""
import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
os.environ.setdefault("KOLO_ULFM_BUILD_DIR", str(ROOT / "build-ulfm"))
os.environ.setdefault("KOLO_ULFM_MPIRUN", str(ROOT / ".venv-ompi5" / "bin" / "mpirun"))
os.environ.setdefault("KOLO_BUILD_DIR", str(ROOT / "build"))
for folder in ("tests/system/elastic", "tests/system/elastic_in_place"):
    sys.path.insert(0, str(ROOT / folder))
import chaos  # noqa: E402


def spread(values, unit):
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    return "%s%s / %s%s / %s%s (min / median / max of %d)" % (
        fmt(min(values)), unit, fmt(statistics.median(values)), unit, fmt(max(values)), unit, len(values))


def fmt(v):
    return "%.2f" % v if isinstance(v, float) else str(v)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mode", choices=["in-place", "restart"], default="in-place")
    parser.add_argument("--jobs", type=int, default=5)
    parser.add_argument("--faults", type=int, default=5, help="per job, besides the death inside a commit")
    parser.add_argument("--ranks", type=int, default=0,
                        help="default: in place, enough for every fault to be a double (2 x faults + 2); 4 by restart")
    parser.add_argument("--epochs", type=int, default=0, help="default: enough for the faults")
    parser.add_argument("--kinds", default="kill,freeze,double")
    parser.add_argument("--hosts", type=int, default=0,
                        help="in place only: that many emulated hosts (tests/system/cluster/cluster.sh, as root), a rank "
                             "each; kinds may then include cut (a host's link down for good)")
    parser.add_argument("--seed", type=int, default=None, help="the first job's; the next ones follow")
    args = parser.parse_args()
    kinds = tuple(args.kinds.split(","))
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    # Each fault takes a rank (two for a double), the death inside a commit one more, and one rank must be
    # left to train: with fewer, the last faults find no victim and the job fails its count of faults.
    needed = args.faults * (2 if "double" in kinds else 1) + 2
    if args.mode == "in-place" and args.ranks and not args.hosts and args.ranks < needed:
        parser.error("--ranks %d: %d faults of kinds %s and a death inside a commit need at least %d ranks"
                     % (args.ranks, args.faults, ",".join(kinds), needed))
    if args.mode == "in-place":
        from test_chaos import soak_in_place as soak
        ranks = args.ranks or needed
        epochs = args.epochs or 6 + 3 * args.faults
        options = dict(ranks=ranks, step_seconds=0.03)
        if args.hosts:
            options.update(hosts=args.hosts, ranks=args.hosts, ranks_left=2)
            ranks = args.hosts
    else:
        from test_chaos_restart import soak_by_restart as soak
        ranks = args.ranks or 4
        epochs = args.epochs or 8 + 5 * args.faults
        options = dict(ranks=ranks, step_seconds=0.04)
    faults, failures, walls = [], [], []
    for j in range(args.jobs):
        with tempfile.TemporaryDirectory() as tmp:
            started = time.time()
            text, monkey, returncode, out = soak(Path(tmp), seed + j, faults=args.faults, epochs=epochs, kinds=kinds,
                                                 extra_env={"ELASTIC_TEST_PRINT_STEPS": "1"}, **options)
            walls.append(time.time() - started)
            try:
                monkey.check(text, returncode, out, epochs)
                verdict = "ok"
            except AssertionError as e:
                verdict = "FAILED: " + str(e).splitlines()[0]
                failures.append((seed + j, verdict))
                with open("/tmp/chaos_soak_%d.log" % (seed + j), "w") as f:
                    f.write(text)
            for f in monkey.faults:
                faults.append((f, chaos.steps_redone(text, f)))
            print("job %d (seed %d, %d ranks, %.0f s): %s" % (j + 1, seed + j, ranks, walls[-1], verdict), flush=True)
            for f in monkey.faults:
                print("  %s, %s step(s) redone" % (f.describe(), chaos.steps_redone(text, f)), flush=True)
    print("\n%s, %d jobs of %d ranks, %d epochs, kinds %s" % (args.mode, args.jobs, ranks, epochs, ",".join(kinds)))
    recovered = sum(f.recovered_at is not None for f, _ in faults)
    last = sum(f.ended_first for f, _ in faults)
    print("faults: %d, training again after %d, %d struck in a job's last steps; %d deaths inside a commit; "
          "jobs failed: %d of %d" % (len(faults), recovered, last, args.jobs, len(failures), args.jobs))
    for kind in kinds:
        mine = [(f, r) for f, r in faults if f.kind == kind]
        if mine:
            print("  %-6s training again after %s; steps redone %s" %
                  (kind, spread([f.seconds() for f, _ in mine], " s"), spread([r for _, r in mine], "")))
    print("job wall time: %s" % spread(walls, " s"))
    for s, why in failures:
        print("seed %d: %s (output in /tmp/chaos_soak_%d.log)" % (s, why, s))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
