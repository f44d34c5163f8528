"""An example of examples/ (jax, keras or tensorflow: scripts written with Horovod's API) as the loop of Ray Train's
DataParallelTrainer with kolo.ray.KoloConfig, 2 workers; rank 0 prints the example's lines.

    PYTHONPATH=build/python python tests/system/ray/examples_on_ray_train.py FRAMEWORK [EXAMPLE ARGS...]
        (a Python with ray[train] and the framework: .ci/setup's .venv has JAX, Keras and TensorFlow)
"""
import os
import runpy
import shutil
import sys
import tempfile
from pathlib import Path

import ray
from ray.train import RunConfig, ScalingConfig
from ray.train.v2.api.data_parallel_trainer import DataParallelTrainer

from kolo.ray import KoloConfig

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def loop(config):
    # The example as its own script: its arguments, run as __main__ (it calls init() itself).
    sys.argv = [config["script"]] + config["args"]
    runpy.run_path(config["script"], run_name="__main__")


def main():
    framework, args = sys.argv[1], sys.argv[2:]
    temp_dir = tempfile.mkdtemp(prefix="kolo-ray-session-")
    ray.init(num_cpus=2, include_dashboard=False, _temp_dir=temp_dir,
             runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", ""), "KERAS_BACKEND":
                                       "jax" if framework == "jax" else os.environ.get("KERAS_BACKEND", "tensorflow"),
                                       "TF_CPP_MIN_LOG_LEVEL": "2", "JAX_PLATFORMS": "cpu"}})
    try:
        DataParallelTrainer(loop, train_loop_config={"script": str(EXAMPLES / framework / "digits_kolo.py"), "args": args},
                            backend_config=KoloConfig(),
                            scaling_config=ScalingConfig(num_workers=2, resources_per_worker={"CPU": 1}),
                            run_config=RunConfig(storage_path=os.path.join(temp_dir, "results"))).fit()
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
