"""horovod.tensorflow's Keras pieces: SyncBatchNormalization against BatchNormalization on the whole
batch (output, moving statistics, the input's gradient), and DistributedOptimizer through model.fit."""
import numpy as np
import pytest
import tensorflow as tf

import kolo.tensorflow as kolo

keras = pytest.importorskip("keras")
if keras.backend.backend() != "tensorflow":
    pytest.skip("Keras runs on %s here; these need its TensorFlow backend" % keras.backend.backend(),
                allow_module_level=True)


def test_sync_batch_normalization_is_batch_normalization_of_the_whole_batch(rank, size):
    rows = {r: np.arange(12, dtype=np.float32).reshape(4, 3) * (r + 1) + r for r in range(size)}
    x = tf.constant(rows[rank])
    sync = kolo.SyncBatchNormalization(momentum=0.9, fused=False)  # Horovod's argument, accepted
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = sync(x, training=True)
        loss = tf.reduce_sum(y * y * (rank + 1))
    dx = tape.gradient(loss, x)
    whole = tf.constant(np.concatenate([rows[r] for r in range(size)]))
    reference = keras.layers.BatchNormalization(momentum=0.9)
    weights = tf.constant(np.repeat(np.arange(1, size + 1, dtype=np.float32), 4)[:, None])
    with tf.GradientTape() as tape:
        tape.watch(whole)
        expected = reference(whole, training=True)
        ref_loss = tf.reduce_sum(expected * expected * weights)
    ref_dx = tape.gradient(ref_loss, whole)
    mine = slice(4 * rank, 4 * rank + 4)
    np.testing.assert_allclose(y.numpy(), expected.numpy()[mine], rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sync.moving_mean.numpy(), reference.moving_mean.numpy(), rtol=1e-5)
    np.testing.assert_allclose(sync.moving_variance.numpy(), reference.moving_variance.numpy(), rtol=1e-5)
    # Each rank's loss reaches every row through the statistics: the sum of the ranks' losses.
    np.testing.assert_allclose(dx.numpy(), ref_dx.numpy()[mine], rtol=1e-4, atol=1e-4)


def test_distributed_optimizer_for_keras_optimizers(rank, size):
    keras.utils.set_random_seed(4)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    opt = kolo.DistributedOptimizer(keras.optimizers.SGD(0.1))
    model.compile(optimizer=opt, loss="mse")
    before = [w.numpy() for w in model.trainable_weights]
    x = np.full((2, 3), rank + 1.0, np.float32)
    model.fit(x, np.zeros((2, 2), np.float32), batch_size=2, epochs=1, verbose=0, shuffle=False)
    with pytest.raises(ValueError, match="wraps Keras optimizers"):
        kolo.DistributedOptimizer(object())
    # The kernel's gradient averaged over the ranks: every rank ends with the same weights.
    kernels = kolo.allgather(model.trainable_weights[0].value[None], name="kernel")
    assert all(np.array_equal(kernels[0].numpy(), k.numpy()) for k in kernels)
    assert not np.array_equal(before[0], model.trainable_weights[0].numpy())


def test_partial_distributed_gradient_tape_keeps_local_layers_local(rank, size):
    keras.utils.set_random_seed(6)
    shared, local = keras.layers.Dense(2), keras.layers.Dense(1)
    model = keras.Sequential([keras.Input((3,)), shared, local])
    x = tf.fill([2, 3], float(rank + 1))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(x))
    own = tape.gradient(loss, model.trainable_variables)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(x))
    grads = kolo.PartialDistributedGradientTape(tape, local_layers=local).gradient(loss, model.trainable_variables)
    local_ids = {id(v) for v in local.trainable_weights}
    for i, (v, g, o) in enumerate(zip(model.trainable_variables, grads, own)):
        want = o / size if id(v) in local_ids else kolo.allreduce(o, name="partial.ref.%d" % i)
        np.testing.assert_allclose(g.numpy(), np.asarray(want), rtol=1e-6)


def test_every_horovod_tensorflow_name_but_those_to_come():
    names = ["init", "shutdown", "is_initialized", "size", "local_size", "cross_size", "rank", "local_rank",
             "cross_rank", "is_homogeneous", "rank_op", "local_rank_op", "size_op", "local_size_op",
             "process_set_included_op", "mpi_threads_supported", "mpi_enabled", "mpi_built", "gloo_enabled",
             "gloo_built", "nccl_built", "ddl_built", "ccl_built", "cuda_built", "rocm_built", "start_timeline",
             "stop_timeline", "ProcessSet", "global_process_set", "add_process_set", "remove_process_set", "Average",
             "Sum", "Adasum", "Min", "Max", "Product", "Compression", "allreduce", "grouped_allreduce", "allgather",
             "grouped_allgather", "broadcast", "broadcast_", "alltoall", "reducescatter", "grouped_reducescatter",
             "join", "barrier", "broadcast_variables", "broadcast_object", "broadcast_object_fn", "allgather_object",
             "DistributedGradientTape", "PartialDistributedGradientTape", "DistributedOptimizer",
             "SyncBatchNormalization", "elastic", "broadcast_global_variables", "BroadcastGlobalVariablesHook"]
    assert [n for n in names if not hasattr(kolo, n)] == []
    for name in ("run", "TensorFlowState", "TensorFlowKerasState", "State", "ObjectState", "HostsUpdatedInterrupt"):
        assert hasattr(kolo.elastic, name), name
    assert kolo.broadcast_object_fn(root_rank=0)({"x": kolo.rank()}) == {"x": 0}


def test_sync_batch_normalization_refuses_a_fused_kernel():
    with pytest.raises(ValueError, match="fused=True"):
        kolo.SyncBatchNormalization(fused=True)
