"""kolo.tensorflow's ops on GPU tensors: the GPU kernels run (not a copy to the host), results stay on
the GPU and are exact, eagerly and inside tf.function, and a DistributedGradientTape step on the GPU
matches the same step on the CPU."""
import numpy as np
import pytest
import tensorflow as tf

import kolo.tensorflow as kolo

MODES = ["eager", "function"]


def run(mode, fn, *args):
    return (tf.function(fn) if mode == "function" else fn)(*args)


@pytest.mark.parametrize("mode", MODES)
def test_every_collective_runs_on_the_gpu_exactly(mode):
    r, n = kolo.rank(), kolo.size()

    def step(x, rows, ints):
        return (kolo.allreduce(x, op=kolo.Sum, name="g.sum." + mode), kolo.allreduce(x, name="g.avg." + mode),
                kolo.allreduce(ints, op=kolo.Max, name="g.max." + mode),
                kolo.allgather(rows, name="g.ag." + mode), kolo.broadcast(x, root_rank=n - 1, name="g.bc." + mode),
                kolo.reducescatter(tf.tile(x[None, :], [n + 1, 1]), op=kolo.Sum, name="g.rs." + mode),
                kolo.alltoall(tf.fill([n, 2], float(r)), name="g.a2a." + mode),
                kolo.grouped_allreduce([x, ints], op=kolo.Sum, name="g.grp." + mode))

    with tf.device("/GPU:0"):
        x = tf.constant([float(r + 1), 2.0, -3.0])
        rows = tf.fill([r + 1, 2], float(r))
        ints = tf.constant([r, -r, 7], tf.int32)
        total, avg, hi, gathered, root, scattered, exchanged, grouped = run(mode, step, x, rows, ints)
    for t in (total, avg, hi, gathered, root, scattered, exchanged, *grouped):
        assert "GPU" in t.device, t.device
    s = float(n * (n + 1) // 2)
    np.testing.assert_array_equal(total.numpy(), [s, 2.0 * n, -3.0 * n])
    np.testing.assert_array_equal(avg.numpy(), np.asarray([s, 2.0 * n, -3.0 * n], np.float32) * np.float32(1.0 / n))
    np.testing.assert_array_equal(hi.numpy(), [n - 1, 0, 7])
    np.testing.assert_array_equal(gathered.numpy()[:, 0], [float(q) for q in range(n) for _ in range(q + 1)])
    np.testing.assert_array_equal(root.numpy(), [float(n), 2.0, -3.0])
    mine = (n + 1) // n + (1 if r < (n + 1) % n else 0)
    np.testing.assert_array_equal(scattered.numpy(), np.tile([s, 2.0 * n, -3.0 * n], (mine, 1)))
    np.testing.assert_array_equal(exchanged.numpy()[:, 0], [float(q) for q in range(n)])
    np.testing.assert_array_equal(grouped[0].numpy(), total.numpy())
    np.testing.assert_array_equal(grouped[1].numpy(), [n * (n - 1) // 2, -(n * (n - 1) // 2), 7 * n])


def test_a_tape_step_on_the_gpu_equals_the_same_step_on_the_cpu():
    r = kolo.rank()
    data = np.random.RandomState(r).rand(8, 4).astype(np.float32)
    start = np.random.RandomState(0).rand(4, 1).astype(np.float32)

    def step(device):
        with tf.device(device):
            w = tf.Variable(start)
            with kolo.DistributedGradientTape(tf.GradientTape()) as tape:
                loss = tf.reduce_sum(tf.matmul(tf.constant(data), w) ** 2)
            (g,) = tape.gradient(loss, [w])
            return g
    on_gpu = step("/GPU:0")
    on_cpu = step("/CPU:0")
    assert "GPU" in on_gpu.device
    np.testing.assert_allclose(on_gpu.numpy(), on_cpu.numpy(), rtol=1e-6)
