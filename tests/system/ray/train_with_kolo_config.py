"""Ray Train's DataParallelTrainer with kolo.ray.KoloConfig: a loop written with Horovod's API (kolo.torch here, as
kolo.jax, kolo.tensorflow or kolo.keras would be), 2 workers, the launch tests' network; prints each worker's rank,
its place and the trained weights' sum.

    PYTHONPATH=build/python python tests/system/ray/train_with_kolo_config.py     (a Python with ray[train], torch)
"""
import os
import shutil
import sys
import tempfile
from pathlib import Path

import ray
import ray.train
from ray.train import RunConfig, ScalingConfig
from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer

from kolo.ray import KoloConfig

LAUNCH_TESTS = str(Path(__file__).resolve().parents[1] / "torch_backend")


def loop(config):
    import torch
    import kolo.torch as hvd
    sys.path.insert(0, config["launch_tests"])
    from ddp_training import network, rows, STEPS
    hvd.init()
    model = network()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    x, y = rows()
    r, n = hvd.rank(), hvd.size()
    for _ in range(STEPS):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x[r::n]), y[r::n]).backward()
        opt.step()
    total = float(sum(p.detach().sum() for p in model.parameters()))
    print("kolo rank %d of %d, local %d of %d: weights sum %r"
          % (r, n, hvd.local_rank(), hvd.local_size(), total), flush=True)
    ray.train.report({"sum": total})


def main():
    temp_dir = tempfile.mkdtemp(prefix="kolo-ray-session-")
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp_dir,
             runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}})
    try:
        DataParallelTrainer(loop, train_loop_config={"launch_tests": LAUNCH_TESTS}, backend_config=KoloConfig(),
                            scaling_config=ScalingConfig(num_workers=2, resources_per_worker={"CPU": 1}),
                            run_config=RunConfig(storage_path=os.path.join(temp_dir, "results"))).fit()
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
