"""kolo.ray.RayExecutor running a TensorFlow function in Horovod's idiom (kolo.tensorflow: broadcast_variables, a
tf.function step through DistributedGradientTape) at 4 workers, 2 on each of 2 emulated hosts, to the weights of
the same steps in one process. Needs root (network namespaces) and a Python with Ray and TensorFlow (ctest's
ray_tensorflow runs it with .ci/setup's .venv):

    PYTHONPATH=build/python .venv/bin/python -m pytest tests/system/ray/test_ray_executor_tensorflow.py
"""
import sys

import pytest

pytest.importorskip("ray", reason="Ray is not installed in this Python (%s)" % sys.executable)
pytest.importorskip("tensorflow", reason="TensorFlow is not installed in this Python (%s)" % sys.executable)

from executor_jobs import tf_one_process_weights  # noqa: E402
from ray_harness import on_ray_cluster, assert_packed_on_two_hosts  # noqa: E402


def test_a_tensorflow_function_trains_to_one_process_weights_on_two_nodes():
    results, text = on_ray_cluster("train_tf", "--hosts", "2", "--per-host", "2", env={"TF_CPP_MIN_LOG_LEVEL": "2"})
    ranks = results.get("train_tf")
    assert ranks is not None, text[-5000:]
    assert_packed_on_two_hosts(ranks)
    expected = tf_one_process_weights()
    for r in ranks:
        for got, want in zip(r["weights"], expected):
            assert got == pytest.approx(want, rel=0, abs=1e-12)
