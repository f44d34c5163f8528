"""How long elastic training takes to go on after a failure, in place (Open MPI 5's ULFM, no process
restarted) beside the restart path (any MPI, kolorun restarts the workers), in the same run: 3 ranks
train tests/system/elastic/elastic_digits.py and rank 2 is killed before step 10 (or frozen, in place only:
found by ULFM's detector, 4 s here). Reports, per run, the time from the event to the job training
again on 2 ranks, and for in place the part that is kolo's own (restore, shrink, restart and sync,
as the survivors print it); the rest is detection.

    KOLO_BUILD_DIR=build KOLO_ULFM_BUILD_DIR=build-ulfm KOLO_ULFM_MPIRUN=.venv-ompi5/bin/mpirun \\
        python3 benchmarks/elastic_in_place.py [--runs 5]
"""
import argparse
import pathlib
import re
import statistics
import sys
import tempfile

tests = pathlib.Path(__file__).resolve().parents[1] / "tests" / "system"
sys.path.insert(0, str(tests / "elastic_in_place"))
sys.path.insert(0, str(tests / "elastic"))
import test_elastic  # noqa: E402 (its run_job starts the restart path's job as the tests do)
import test_in_place  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--runs", type=int, default=5)
args = parser.parse_args()
test_elastic.EPOCHS = 1


def in_place(event, peer_timeout=30):
    tmp = pathlib.Path(tempfile.mkdtemp())
    job, log, _ = test_in_place.start_job(tmp, event, peer_timeout=peer_timeout)
    text = test_in_place.finish(job, log, until=("rank 0 of 2 ends with pid", "rank 1 of 2 ends with pid"))
    test_in_place.end_job(job, text)  # the frozen rank (the survivors are done), or nothing left
    own = max(float(v) for v in re.findall(r"restore, shrink, restart and sync: ([\d.]+) s", text))
    return test_in_place.seconds_to_recover(text), own


def restart():
    job, _ = test_elastic.run_job(pathlib.Path(tempfile.mkdtemp()), "localhost:3", event="0:2:10:die",
                                  hosts_after="localhost:2")
    if job.returncode != 0:
        sys.exit(job.stdout + job.stderr)
    happened = float(re.search(r"event \w+ at ([\d.]+)", job.stdout).group(1))
    trains = float(re.search(r"attempt 1 starts at step \d+ on \d ranks at ([\d.]+)", job.stdout).group(1))
    return trains - happened


rows = {"killed, in place": [], "killed, restart path": [], "frozen, in place": []}
kolo_part = {"killed, in place": [], "frozen, in place": []}
for _ in range(args.runs):  # interleaved, so that drift hits every row alike
    total, own = in_place("0:2:10:die")
    rows["killed, in place"].append(total)
    kolo_part["killed, in place"].append(own)
    rows["killed, restart path"].append(restart())
    total, own = in_place("0:2:10:freeze", peer_timeout=3)
    rows["frozen, in place"].append(total)
    kolo_part["frozen, in place"].append(own)
print("# 3 ranks -> 2 on one host, digits; seconds from the event to training again, %d runs" % args.runs)
print("%-22s %10s %24s  %s" % ("", "median", "kolo's part (median)", "runs"))
for name, values in rows.items():
    part = "%.3f" % statistics.median(kolo_part[name]) if name in kolo_part else "-"
    print("%-22s %10.3f %24s  %s" % (name, statistics.median(values), part, ", ".join("%.3f" % v for v in values)))
print("# in place / restart path, killed rank: %.3f" % (statistics.median(rows["killed, in place"]) /
                                                       statistics.median(rows["killed, restart path"])))
