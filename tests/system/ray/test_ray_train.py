"""Ray Train runs an unchanged DDP loop on the kolo backend (TorchConfig(backend="kolo")) to one process's
weights, and loops of Horovod's API under DataParallelTrainer with kolo.ray.KoloConfig (kolo.torch's to the same
weights; kolo's JAX, TensorFlow and Keras examples to what they print under kolorun, where the framework is
there). Needs a Python with ray[train] and torch 2.x (CI: tests/torch2.sh):

    PYTHONPATH=build/python <ray venv>/bin/python -m pytest tests/system/ray
"""
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("ray.train", reason="Ray Train is not installed in this Python (%s)" % sys.executable)
torch = pytest.importorskip("torch")
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "torch_backend"))
from ddp_training import one_process_weights  # noqa: E402


def test_torch_trainer_with_backend_kolo_trains_to_one_process_weights():
    job = subprocess.run([sys.executable, str(HERE / "train_on_kolo.py")], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ, RAY_TRAIN_V2_ENABLED="1"))
    text = job.stdout + job.stderr
    assert job.returncode == 0, text[-4000:]
    sums = re.findall(r"worker (\d) of 2 on kolo: weights sum (\S+)", text)
    assert sorted({r for r, _ in sums}) == ["0", "1"], text[-4000:]  # Ray may echo a line twice
    expected = float(sum(p.sum() for p in one_process_weights()))
    for _, total in sums:
        assert float(total) == pytest.approx(expected, rel=0, abs=1e-12)


def test_data_parallel_trainer_with_kolo_config_runs_a_horovod_idiom_loop_to_one_process_weights():
    job = subprocess.run([sys.executable, str(HERE / "train_with_kolo_config.py")], capture_output=True, text=True,
                         timeout=300, env=dict(os.environ, RAY_TRAIN_V2_ENABLED="1"))
    text = job.stdout + job.stderr
    assert job.returncode == 0, text[-4000:]
    lines = set(re.findall(r"kolo rank (\d) of 2, local (\d) of 2: weights sum (\S+)", text))
    assert sorted({(r, local) for r, local, _ in lines}) == [("0", "0"), ("1", "1")], text[-4000:]
    expected = float(sum(p.sum() for p in one_process_weights()))
    for _, _, total in lines:
        assert float(total) == pytest.approx(expected, rel=0, abs=1e-12)


@pytest.mark.parametrize("framework", ["jax", "tensorflow", "keras"])
def test_an_example_as_a_data_parallel_trainer_loop_prints_what_it_prints_under_kolorun(framework):
    pytest.importorskip(framework, reason="%s is not installed in this Python (%s): .ci/setup's .venv has it"
                        % (framework, sys.executable))
    env = dict(os.environ, RAY_TRAIN_V2_ENABLED="1", TF_CPP_MIN_LOG_LEVEL="2", JAX_PLATFORMS="cpu",
               KERAS_BACKEND="jax" if framework == "jax" else "tensorflow")
    ray_job = subprocess.run([sys.executable, str(HERE / "examples_on_ray_train.py"), framework, "--epochs", "2"],
                             capture_output=True, text=True, timeout=600, env=env)
    assert ray_job.returncode == 0, (ray_job.stdout + ray_job.stderr)[-4000:]
    kolorun = Path(os.environ.get("KOLO_BUILD_DIR", HERE.parents[2] / "build")) / "bin" / "kolorun"
    reference = subprocess.run([str(kolorun), "--gloo", "-np", "2", sys.executable,
                                str(HERE.parents[2] / "examples" / framework / "digits_kolo.py"), "--epochs", "2"],
                               capture_output=True, text=True, timeout=600, env=env)
    assert reference.returncode == 0, (reference.stdout + reference.stderr)[-4000:]
    # The examples' own lines, and Keras' fit's (its figures, not its timings).
    line = r"epoch +\d+ +loss \S+ +test accuracy \S+|accuracy: \S+ - loss: \S+ - val_accuracy: \S+ - val_loss: \S+"
    epochs = re.findall(line, reference.stdout)
    assert len(epochs) == 2, reference.stdout[-3000:]
    got = re.findall(line, ray_job.stdout + ray_job.stderr)
    assert set(got) == set(epochs), (ray_job.stdout + ray_job.stderr)[-4000:]
