"""Ray Train's TorchTrainer on the kolo backend: TorchConfig(backend="kolo"), 2 workers, the launch tests' DDP
network; prints the trained weights' sum and the backend. Each worker registers the backend as it starts
(runtime_env's worker_process_setup_hook; a pip-installed kolo needs no hook: torch finds its entry point).

    PYTHONPATH=build/python python tests/system/ray/train_on_kolo.py     (a Python with ray[train] and torch 2.x)
"""
import os
import shutil
import sys
import tempfile
from pathlib import Path

import ray
import ray.train
from ray.train import RunConfig, ScalingConfig
from ray.train.torch import TorchConfig, TorchTrainer

LAUNCH_TESTS = str(Path(__file__).resolve().parents[1] / "torch_backend")


def loop(config):
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel as DDP
    sys.path.insert(0, config["launch_tests"])
    from ddp_training import network, train_shard
    rank, size = dist.get_rank(), dist.get_world_size()
    net = network()
    ddp = DDP(net)
    train_shard(ddp, torch.optim.SGD(ddp.parameters(), lr=0.1), rank, size)
    total = float(sum(p.detach().sum() for p in net.parameters()))
    print("worker %d of %d on %s: weights sum %r" % (rank, size, dist.get_backend(), total), flush=True)
    ray.train.report({"sum": total})


def main():
    # Ray's sockets and session folders in a folder of this run's, removed on every way out.
    temp_dir = tempfile.mkdtemp(prefix="kolo-ray-session-")
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp_dir, runtime_env={
        "env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")},
        "worker_process_setup_hook": "kolo.torch.backend.register"})
    try:
        TorchTrainer(loop, train_loop_config={"launch_tests": LAUNCH_TESTS},
                     scaling_config=ScalingConfig(num_workers=2, resources_per_worker={"CPU": 1}),
                     torch_config=TorchConfig(backend="kolo"),
                     run_config=RunConfig(storage_path=os.path.join(temp_dir, "results"))).fit()
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
