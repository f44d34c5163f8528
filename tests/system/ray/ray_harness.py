"""What the RayExecutor tests share: a driver (executor_jobs.py) run on a Ray cluster of emulated hosts, its
results read back, and the layout every 4-worker job on 2 hosts must have."""
import json
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
from emulated_hosts import on_hosts  # noqa: E402

HERE = Path(__file__).resolve().parent


def on_ray_cluster(*job, hosts=2, cpus=2, timeout=400, env=None):
    """Runs executor_jobs.py JOB on a Ray cluster of `hosts` emulated hosts, with this Python's Ray; its results
    by kind, and the whole output."""
    bin_dir = str(Path(sys.executable).parent)
    run = on_hosts([HERE / "ray_cluster.sh", bin_dir, cpus, sys.executable, HERE / "executor_jobs.py", *job], hosts,
                   timeout, dict(os.environ, **(env or {})))
    text = run.stdout + run.stderr
    assert run.returncode == 0, text[-5000:]
    results = {}
    for line in run.stdout.splitlines():
        if line.startswith("RESULT "):
            r = json.loads(line[len("RESULT "):])
            results[r["kind"]] = r["value"]
    return results, text


def assert_packed_on_two_hosts(ranks):
    """Ranks 0-1 on one host, 2-3 on the other, each seeing the layout kolo's hierarchical paths use."""
    assert [r["rank"] for r in ranks] == [0, 1, 2, 3]
    assert {(r["size"], r["local_size"], r["cross_size"]) for r in ranks} == {(4, 2, 2)}
    assert [r["local_rank"] for r in ranks] == [0, 1, 0, 1]
    assert ranks[0]["host"] == ranks[1]["host"] != ranks[2]["host"] == ranks[3]["host"]
