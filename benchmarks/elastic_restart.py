"""How long the restart path of elastic training takes, end to end: from a rank's SIGKILL (3 ranks, its
host leaving the discovery script's list) to the job training again on 2, and from a new slot appearing
(2 ranks) to the job training on 3. Runs tests/system/elastic/elastic_digits.py under kolorun in elastic mode
and reads the timestamps it prints.

    KOLO_BUILD_DIR=build python3 benchmarks/elastic_restart.py [--runs 3]
"""
import argparse
import pathlib
import re
import sys
import tempfile

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "tests" / "system" / "elastic"))
import test_elastic  # noqa: E402 (its run_job starts the job as the tests do)

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--runs", type=int, default=3)
args = parser.parse_args()
test_elastic.EPOCHS = 1
cases = {"killed rank, 3 -> 2 ranks": ("localhost:3", "0:2:10:die", "localhost:2"),
         "host added, 2 -> 3 ranks": ("localhost:2", "0:0:6:grow", "localhost:3")}
for label, (hosts, event, after) in cases.items():
    seconds = []
    for _ in range(args.runs):
        job, _ = test_elastic.run_job(pathlib.Path(tempfile.mkdtemp()), hosts, event=event, hosts_after=after)
        if job.returncode != 0:
            sys.exit(job.stdout + job.stderr)
        happened = float(re.search(r"event \w+ at ([\d.]+)", job.stdout).group(1))
        trains = float(re.search(r"attempt 1 starts at step \d+ on \d ranks at ([\d.]+)", job.stdout).group(1))
        seconds.append(trains - happened)
    print("%-28s to training again: %s s" % (label, ", ".join("%.2f" % s for s in seconds)))
