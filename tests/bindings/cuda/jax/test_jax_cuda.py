"""kolo.jax's custom calls on the CUDA platform: inside jax.jit, on XLA's stream, results on the GPU."""
import jax
import jax.numpy as jnp
import numpy as np

import kolo.jax as kolo


def test_allreduce_allgather_broadcast_inside_jit_on_the_gpu():
    r, n = kolo.rank(), kolo.size()

    @jax.jit
    def step(x, rows):
        total = kolo.allreduce(x * 2.0, op=kolo.Sum, name="jit.sum")
        gathered = kolo.allgather(rows, name="jit.gather")
        root = kolo.broadcast(x, root_rank=n - 1, name="jit.bc")
        return total, gathered, root

    x = jnp.full((1000,), float(r), dtype=jnp.float32)
    rows = jnp.full((2, 3), r, dtype=jnp.int32)
    total, gathered, root = step(x, rows)
    assert list(total.devices())[0].platform == "gpu"
    np.testing.assert_array_equal(np.asarray(total), np.full(1000, n * (n - 1), dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(gathered)[:, 0], np.repeat(np.arange(n, dtype=np.int32), 2))
    np.testing.assert_array_equal(np.asarray(root), np.full(1000, n - 1, dtype=np.float32))


def test_a_gradient_pytree_is_averaged_in_a_jitted_step():
    n = kolo.size()
    grads = {"w": jnp.ones((64, 32)) * kolo.rank(), "b": jnp.arange(32.0)}
    averaged = jax.jit(lambda g: kolo.allreduce(g, name="grads"))(grads)
    np.testing.assert_allclose(np.asarray(averaged["w"]), np.full((64, 32), (n - 1) / 2.0))
    np.testing.assert_allclose(np.asarray(averaged["b"]), np.arange(32.0))
