"""kolo.ray.RayExecutor, horovod.ray's API, on a Ray cluster of 2 emulated hosts (tests/system/cluster/cluster.sh,
tests/system/ray/ray_cluster.sh): a Horovod-idiom torch function trains to one process's weights with its ranks
packed by node; a rank that raises ends the job naming itself; a cluster too small is refused in time. Needs root
(network namespaces) and a Python with Ray and torch 2.x:

    PYTHONPATH=build/python <ray venv>/bin/python -m pytest tests/system/ray
"""
import re
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray", reason="Ray is not installed in this Python (%s)" % sys.executable)
torch = pytest.importorskip("torch")

from ray_harness import on_ray_cluster, assert_packed_on_two_hosts  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "torch_backend"))
from ddp_training import one_process_weights  # noqa: E402


def assert_trained_on_two_hosts(ranks):
    assert_packed_on_two_hosts(ranks)
    expected = [p.flatten().tolist() for p in one_process_weights()]
    for r in ranks:
        for got, want in zip(r["weights"], expected):
            assert got == pytest.approx(want, rel=0, abs=1e-12)


@pytest.mark.parametrize("shape", [["--hosts", "2", "--per-host", "2"], ["--workers", "4"]],
                         ids=["num_hosts", "num_workers"])
def test_a_horovod_idiom_function_trains_to_one_process_weights_on_two_nodes(shape):
    results, text = on_ray_cluster("train", *shape)
    assert "train" in results, text[-5000:]
    assert_trained_on_two_hosts(results["train"])
    # Then run()'s callbacks (horovod.ray's): each value rank 0 logged, in order; with chief_only=False, each rank's.
    assert results["logs_result"] == [0, 1, 2, 3]
    logged = results["logged"]
    assert [v for v in logged if "i" in v] == [{"i": i, "rank": 0} for i in range(3)]
    assert sorted(v["every"] for v in logged if "every" in v) == [0, 1, 2, 3]
    assert len(logged) == 7 and results["tally"] == 7


def test_a_rank_that_raises_ends_the_job_naming_itself_and_a_new_start_trains():
    results, text = on_ray_cluster("failure", "--workers", "4")
    assert results["error"]["message"] == "ValueError: rank 1's batch is bad", text[-5000:]
    assert len(results["error"]["notes"]) == 1
    assert results["error"]["notes"][0].startswith("kolo.ray: rank 1 (node 10.231.")
    assert results["error"]["notes"][0].endswith("failed; every worker of the job was stopped")
    assert results["after"].startswith("RayExecutor: the workers were stopped after rank 1 (node ")
    assert results["again"] == [0, 1, 2, 3]


def test_the_executable_class_execute_single_and_run_remote():
    results, text = on_ray_cluster("executable", "--workers", "2", hosts=2, cpus=1)
    assert results["execute"] == [6, 106], text[-5000:]
    assert results["single"] == 6
    assert results["remote"] == [3, 3]


def test_more_workers_than_the_cluster_holds_is_refused_naming_both():
    results, text = on_ray_cluster("unplaceable", "--hosts", "3", "--per-host", "1")
    assert results["error"] == (
        "RayExecutor: Ray could not place 3 workers of {'CPU': 1} on 3 nodes (1 each) within 10 s "
        "(placement_group_timeout_s): the cluster has {'CPU': 4.0} in all, on 2 node(s); ask for fewer workers or "
        "resources, or add nodes"), text[-5000:]


@pytest.mark.parametrize("fate,left", [("actor", 3), ("node", 2)])
def test_the_elastic_executor_goes_on_in_place_without_a_lost_worker_or_node(fate, left):
    # 4 workers (2 per node, min_workers 2); at step 2 the last rank's actor is killed, or the whole node (raylet
    # and both workers, executor_jobs.lose_this_node) of the last rank off the driver's node. The survivors roll
    # back to the last commit and finish.
    results, text = on_ray_cluster("elastic", "--min", "2", "--max", "4", "--fate", fate)
    ranks = results.get("elastic")
    assert ranks is not None, text[-5000:]
    assert [(r["rank"], r["size"], r["first_size"]) for r in ranks] == [(i, left, 4) for i in range(left)]
    assert results["workers_after"] == left
    expected = [p.flatten().tolist() for p in one_process_weights()]
    for r in ranks:
        for got, want in zip(r["weights"], expected):
            assert got == pytest.approx(want, rel=0, abs=1e-12)
    # In place, not restarted: each survivor started in the job of 4 (first_size above). Its log line is not
    # checked: Ray's forwarding of the workers' output lost it where the lost node held ranks 0 and 1.


def test_the_elastic_executor_ends_the_job_at_a_failure_past_its_reset_limit():
    # reset_limit=0: the first lost worker ends the job, as kolorun --reset-limit 0 would.
    results, text = on_ray_cluster("elastic", "--min", "2", "--max", "4", "--fate", "actor", "--reset-limit", "0")
    assert "elastic" not in results, text[-5000:]
    assert results["error"]["type"] == "ActorDiedError" or results["error"]["type"].endswith("ActorError"), text[-5000:]
    (note,) = results["error"]["notes"]
    assert re.fullmatch(r"kolo\.ray: rank 3 \(node [0-9.]+, \S+\) was lost, failure 1 past reset_limit 0; every "
                        r"worker of the job was stopped", note), note
    assert results["workers_after"] == 0


def test_the_elastic_executor_grows_onto_a_node_that_joins_at_its_next_commit():
    # 2 workers on the head host (min_workers 2, max_workers 4); a second node joins the Ray cluster while they
    # train: the ranks leave at their next commit and the job goes on from it on 4 workers.
    from ddp_training import network, train_shard
    results, text = on_ray_cluster("grow", "--min", "2", "--max", "4", env={"RAY_LATE_HOSTS": "1"})
    ranks = results.get("grow")
    assert ranks is not None, text[-5000:]
    assert [(r["rank"], r["size"]) for r in ranks] == [(i, 4) for i in range(4)], text[-5000:]
    assert {r["attempt"] for r in ranks} == {1}
    assert results["workers_after"] == 4
    assert re.search(r"kolo\.elastic: attempt 1 on 4 ranks resumes from commit \d+", text), text[-5000:]
    # The callback heard rank 0 at each commit of both attempts, in order (the second going on from the first's).
    commits = results["commits"]
    assert [c["batch"] for c in commits] == list(range(1, commits[-1]["batch"] + 1)) and commits[-1]["batch"] == 24
    assert {(c["attempt"], c["size"]) for c in commits} == {(0, 2), (1, 4)}
    net = network()
    train_shard(net, torch.optim.SGD(net.parameters(), lr=0.1), 0, 1, steps=24)  # GROW_STEPS
    for r in ranks:
        for got, want in zip(r["weights"], [p.detach().flatten().tolist() for p in net.parameters()]):
            assert got == pytest.approx(want, rel=0, abs=1e-12)
