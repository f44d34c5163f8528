"""kolo.keras' Horovod names beyond fit's: the collectives on values, broadcast_global_variables,
load_model, PartialDistributedOptimizer, backward_passes_per_step, LearningRateScheduleCallback with
momentum correction and BestModelCheckpoint, with exact expected values at N ranks."""
import os
import shutil
import tempfile

import keras
import numpy as np
import pytest

import kolo.keras as kolo
from test_keras import BATCH, ROWS, TOLERANCE, assert_same_on_every_rank, data, make_model, shard


def numpy(x):
    return np.asarray(keras.ops.convert_to_numpy(x))


def bare(seed):
    """make_model's network, not compiled."""
    keras.utils.set_random_seed(seed)
    return keras.Sequential([keras.Input((10,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(3)])


def shared_dir(rank, name):
    """A directory rank 0 makes, its path broadcast to every rank (one machine here)."""
    path = tempfile.mkdtemp(prefix="kolo_keras_") if rank == 0 else ""
    token = np.frombuffer(path.encode().ljust(256), np.uint8)
    return bytes(numpy(kolo.broadcast(token, 0, name=name))).decode().strip()


def _gradients(model, x, y):
    """The gradients of the mean loss over (x, y) at the model's weights, on either backend."""
    loss_fn = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    if keras.backend.backend() == "tensorflow":
        import tensorflow as tf
        with tf.GradientTape() as tape:
            loss = loss_fn(y, model(x))
        return [np.asarray(g) for g in tape.gradient(loss, model.trainable_variables)]
    import jax
    non_trainable = [v.value for v in model.non_trainable_variables]

    def loss(values):
        logits, _ = model.stateless_call(values, non_trainable, x)
        return loss_fn(y, logits)
    return [np.asarray(g) for g in jax.grad(loss)([v.value for v in model.trainable_variables])]


def test_collectives_on_values(rank, size):
    # A Keras script in Horovod's idiom gathers each rank's losses.
    losses = numpy(kolo.allgather(np.full((rank + 1,), rank, np.float32), name="losses"))
    np.testing.assert_array_equal(losses, np.concatenate([np.full((r + 1,), r, np.float32) for r in range(size)]))
    assert numpy(kolo.allreduce(float(rank), name="mean")) == pytest.approx((size - 1) / 2, abs=0)
    assert numpy(kolo.allreduce(rank + 1, name="sum", average=False)) == size * (size + 1) // 2
    assert numpy(kolo.allreduce(np.float32(rank), name="op", op=kolo.Sum)) == size * (size - 1) / 2
    half = numpy(kolo.allreduce(np.ones(4, np.float32), name="fp16", op=kolo.Sum, compression=kolo.Compression.fp16))
    assert half.dtype == np.float32 and half.tolist() == [float(size)] * 4
    with pytest.raises(ValueError, match="pass op or average, not both"):
        kolo.allreduce(1.0, name="both", average=True, op=kolo.Sum)
    np.testing.assert_array_equal(numpy(kolo.broadcast(np.arange(3) + rank, root_rank=size - 1, name="b")),
                                  np.arange(3) + size - 1)
    # 5 rows of (row + rank): the sum's rows, this rank's block (the first 5 % size ranks one row more).
    counts = [5 // size + (r < 5 % size) for r in range(size)]
    start = sum(counts[:rank])
    mine = numpy(kolo.reducescatter(np.arange(5, dtype=np.float32)[:, None] + rank, name="rs", op=kolo.Sum))
    np.testing.assert_array_equal(mine[:, 0], size * np.arange(start, start + counts[rank]) + size * (size - 1) / 2)
    averaged = numpy(kolo.reducescatter(np.full((size * 2, 2), rank, np.float32), name="rs.avg"))
    np.testing.assert_array_equal(averaged, np.full((2, 2), (size - 1) / 2, np.float32))


def test_broadcast_global_variables_needs_and_takes_a_model(rank, size):
    model = make_model(10 + rank, keras.optimizers.SGD(0.1))
    with pytest.raises(kolo.KoloValueError, match="Keras 3 has no collection of global variables"):
        kolo.broadcast_global_variables(0)
    kolo.broadcast_global_variables(0, model)
    assert_same_on_every_rank(model, size)
    reference = make_model(10, keras.optimizers.SGD(0.1))
    for got, want in zip(model.weights, reference.weights):
        np.testing.assert_array_equal(numpy(got), numpy(want))


def test_load_model_resumes_with_the_optimizer_state(rank, size):
    x, y = data()
    xs, ys, share = shard(rank, size, x, y)
    directory = shared_dir(rank, "load_model.dir")
    path = os.path.join(directory, "m.keras")
    # Two epochs in one go, against one epoch, saved, loaded with load_model, one more epoch.
    whole = make_model(5, kolo.DistributedOptimizer(keras.optimizers.SGD(0.05, momentum=0.9)))
    whole.fit(xs, ys, batch_size=share, epochs=2, shuffle=False, verbose=0)
    first = make_model(5, kolo.DistributedOptimizer(keras.optimizers.SGD(0.05, momentum=0.9)))
    first.fit(xs, ys, batch_size=share, epochs=1, shuffle=False, verbose=0)
    if rank == 0:
        first.save(path)
    kolo.allreduce(0.0, name="saved")  # a barrier: the file is there before anyone loads it
    resumed = kolo.load_model(path)
    assert type(resumed.optimizer).__name__ == "SGD" and isinstance(resumed.optimizer, keras.optimizers.SGD)
    assert int(resumed.optimizer.iterations) == ROWS // BATCH
    resumed.fit(xs, ys, batch_size=share, epochs=1, shuffle=False, verbose=0)
    for got, want in zip(resumed.weights, whole.weights):
        np.testing.assert_allclose(numpy(got), numpy(want), rtol=0, atol=TOLERANCE)
    assert_same_on_every_rank(resumed, size)
    kolo.allreduce(0.0, name="loaded")
    if rank == 0:
        shutil.rmtree(directory)


def test_partial_distributed_optimizer_keeps_local_layers_local(rank, size):
    # The first layer is shared (averaged), the last is local: trained on this rank's rows alone, its
    # gradient divided by size (Horovod's scale_local_gradients).
    x, y = data()
    xs, ys, share = shard(rank, size, x, y)
    model = bare(7)
    local = model.layers[-1]
    model.compile(optimizer=kolo.PartialDistributedOptimizer(keras.optimizers.SGD(0.1), local_layers=local),
                  loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    before = [numpy(w) for w in model.trainable_weights]
    model.fit(xs[:share], ys[:share], batch_size=share, epochs=1, shuffle=False, verbose=0)
    # One step by hand: shared layer by the mean over ranks of each rank's gradient, local by own / size.
    reference = bare(7)
    own = _gradients(reference, xs[:share], ys[:share])
    mean = [numpy(kolo.allreduce(g, name="ref.%d" % i)) for i, g in enumerate(own)]
    local_ids = {id(w) for w in reference.layers[-1].trainable_weights}
    for w0, w, g_own, g_mean, ref_w in zip(before, model.trainable_weights, own, mean, reference.trainable_weights):
        g = g_own / size if id(ref_w) in local_ids else g_mean
        np.testing.assert_allclose(numpy(w), w0 - 0.1 * g, rtol=0, atol=1e-6)
    shared = model.layers[0].weights
    for own_w, rank0 in zip([numpy(w) for w in shared], kolo.broadcast([numpy(w) for w in shared], 0, name="shared")):
        np.testing.assert_array_equal(own_w, numpy(rank0))


def test_backward_passes_per_step_sums_passes_and_reduces_once_per_update(rank, size):
    x, y = data()
    xs, ys, share = shard(rank, size, x, y)
    half = share // 2 if share % 2 == 0 else share
    if half == share:
        pytest.skip("needs an even share per rank")
    # Two passes of half a share accumulated and summed (Horovod's default), lr halved: the update of
    # one pass over the whole share at lr. With average_aggregated_gradients: the mean, at lr. Only
    # updates communicate.
    for average, lr in ((False, 0.05), (True, 0.1)):
        model = make_model(9, kolo.DistributedOptimizer(keras.optimizers.SGD(lr), backward_passes_per_step=2,
                                                        average_aggregated_gradients=average))
        directory = shared_dir(rank, "bpps.dir.%d" % average)
        kolo.start_timeline(os.path.join(directory, "timeline.json"))
        model.fit(xs[:share * 2], ys[:share * 2], batch_size=half, epochs=1, shuffle=False, verbose=0)
        kolo.stop_timeline()
        if rank == 0:
            # Four passes, two updates: each gradient crossed ranks twice.
            counts = negotiations(os.path.join(directory, "timeline.json"))
            assert sorted(counts.values()) == [2] * len(model.trainable_weights), counts
            shutil.rmtree(directory)
        reference = make_model(9, kolo.DistributedOptimizer(keras.optimizers.SGD(0.1)))
        reference.fit(xs[:share * 2], ys[:share * 2], batch_size=share, epochs=1, shuffle=False, verbose=0)
        for got, want in zip(model.weights, reference.weights):
            np.testing.assert_allclose(numpy(got), numpy(want), rtol=0, atol=TOLERANCE)
        assert int(model.optimizer.iterations) == 2  # updates, not passes


def negotiations(timeline):
    """How many times each tensor was negotiated, from a kolo timeline."""
    import collections
    import json
    events = json.loads(open(timeline).read())
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    return collections.Counter(names[e["pid"]] for e in events if e["name"] == "NEGOTIATE")


class RecordRate(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.rates = []

    def on_train_batch_begin(self, batch, logs=None):
        self.rates.append(float(numpy(self.model.optimizer.learning_rate)))


def test_learning_rate_schedule_staircase_and_smooth(rank, size):
    x, y = data()
    xs, ys, share = shard(rank, size, x, y)
    steps = ROWS // BATCH
    for staircase in (True, False):
        model = make_model(11, kolo.DistributedOptimizer(keras.optimizers.SGD(0.1)))
        record = RecordRate()
        schedule = kolo.LearningRateScheduleCallback(0.2, multiplier=lambda e: 1.0 / (1 + e), start_epoch=1,
                                                     end_epoch=3, staircase=staircase)
        model.fit(xs, ys, batch_size=share, epochs=4, shuffle=False, verbose=0, callbacks=[schedule, record])
        epochs = [(e if staircase else e + b / steps) for e in range(4) for b in range(steps)]
        expected = []
        for i, e in enumerate(epochs):
            whole = i // steps
            expected.append(0.2 / (1 + e) if 1 <= whole < 3 else (0.1 if whole < 1 else expected[-1]))
        np.testing.assert_allclose(record.rates, expected, rtol=1e-6)
    constant = kolo.LearningRateScheduleCallback(1.0, multiplier=0.5, start_epoch=2)
    assert [constant.multiplier(e) for e in (2, 3, 4)] == [1.0, 0.5, 0.25]


def test_momentum_correction_scales_the_velocity(rank, size):
    # The rate changes 0.1 -> 0.05 at epoch 1: the first step of epoch 1 must use momentum 0.9 * 0.5 on
    # the velocity, as Horovod's correction does. Checked against SGD by hand on the averaged gradients.
    x, y = data()
    xs, ys, share = shard(rank, size, x, y)
    model = make_model(13, kolo.DistributedOptimizer(keras.optimizers.SGD(0.1, momentum=0.9)))
    schedule = kolo.LearningRateScheduleCallback(0.1, multiplier=lambda e: 0.5 ** e)
    model.fit(xs[:share], ys[:share], batch_size=share, epochs=2, shuffle=False, verbose=0, callbacks=[schedule])
    reference = bare(13)
    weights = [numpy(w) for w in reference.trainable_weights]
    velocity = [np.zeros_like(w) for w in weights]
    for step, (lr, momentum) in enumerate(((0.1, 0.9), (0.05, 0.9 * 0.5))):
        for var, w in zip(reference.trainable_variables, weights):
            var.assign(w)
        grads = [numpy(kolo.allreduce(g, name="mc.%d.%d" % (step, i)))
                 for i, g in enumerate(_gradients(reference, xs[:share], ys[:share]))]
        velocity = [momentum * v - lr * g for v, g in zip(velocity, grads)]
        weights = [w + v for w, v in zip(weights, velocity)]
    for got, want in zip(model.trainable_weights, weights):
        np.testing.assert_allclose(numpy(got), want, rtol=0, atol=1e-6)


def test_best_model_checkpoint_saves_the_best_on_rank_0(rank, size):
    x, y = data()
    xs, ys, share = shard(rank, size, x, y)
    directory = shared_dir(rank, "best.dir")
    path = os.path.join(directory, "best.keras")
    with pytest.raises(ValueError, match="BestModelCheckpoint has no filepath"):
        make_model(1, keras.optimizers.SGD(0.1)).fit(xs, ys, epochs=1, verbose=0,
                                                     callbacks=[kolo.BestModelCheckpoint(monitor="loss")])
    best = kolo.BestModelCheckpoint(monitor="loss", filepath=path)
    losses = []

    class Record(keras.callbacks.Callback):
        def on_epoch_end(self, epoch, logs=None):
            losses.append((logs["loss"], [numpy(w) for w in self.model.weights]))

    model = make_model(3, kolo.DistributedOptimizer(keras.optimizers.SGD(0.05)))
    model.fit(xs, ys, batch_size=share, epochs=3, shuffle=False, verbose=0,
              callbacks=[kolo.MetricAverageCallback(), best, Record()])
    kolo.allreduce(0.0, name="best.saved")
    if rank == 0:
        saved = keras.saving.load_model(path)
        weights = min(losses, key=lambda pair: pair[0])[1]
        for got, want in zip(saved.weights, weights):
            np.testing.assert_array_equal(numpy(got), want)
        shutil.rmtree(directory)


# horovod.keras' public names at its last release (and horovod.keras.callbacks').
HOROVOD_KERAS = ["init", "shutdown", "size", "local_size", "cross_size", "rank", "local_rank", "cross_rank",
                 "is_initialized", "start_timeline", "stop_timeline", "mpi_threads_supported", "mpi_enabled",
                 "mpi_built", "gloo_enabled", "gloo_built", "nccl_built", "ddl_built", "ccl_built", "cuda_built",
                 "rocm_built", "Average", "Sum", "Adasum", "Compression", "global_process_set", "callbacks", "elastic",
                 "DistributedOptimizer", "PartialDistributedOptimizer", "broadcast_global_variables", "allreduce",
                 "allgather", "broadcast", "reducescatter", "load_model"]
HOROVOD_KERAS_CALLBACKS = ["BroadcastGlobalVariablesCallback", "MetricAverageCallback", "LearningRateScheduleCallback",
                           "LearningRateWarmupCallback", "BestModelCheckpoint"]
NOT_YET = []


def test_every_horovod_keras_name_but_those_to_come():
    assert [n for n in HOROVOD_KERAS if not hasattr(kolo, n)] == NOT_YET
    assert [n for n in HOROVOD_KERAS_CALLBACKS if not hasattr(kolo.callbacks, n)] == []
    for name in ("run", "KerasState", "CommitStateCallback", "UpdateBatchStateCallback", "UpdateEpochStateCallback"):
        assert hasattr(kolo.elastic, name), name
    assert kolo.ddl_built() is False and kolo.rocm_built() is False and kolo.mpi_built() is True


def test_adasum_reduces_gradients_and_values(rank, size):
    # Orthogonal contributions: Adasum is their sum. Equal ones: themselves.
    basis = np.zeros(size, np.float32)
    basis[rank] = 1.0
    np.testing.assert_array_equal(numpy(kolo.allreduce(basis, name="adasum.basis", op=kolo.Adasum)),
                                  np.ones(size, np.float32))
    # Every rank the same data: every rank's gradient is equal, and Adasum gives it back, so training
    # with op=Adasum is one process's training.
    x, y = data()
    model = make_model(21, kolo.DistributedOptimizer(keras.optimizers.SGD(0.1), op=kolo.Adasum))
    model.fit(x[:BATCH], y[:BATCH], batch_size=BATCH, epochs=2, shuffle=False, verbose=0)
    reference = make_model(21, keras.optimizers.SGD(0.1))
    reference.fit(x[:BATCH], y[:BATCH], batch_size=BATCH, epochs=2, shuffle=False, verbose=0)
    for got, want in zip(model.weights, reference.weights):
        np.testing.assert_allclose(numpy(got), numpy(want), rtol=0, atol=TOLERANCE)


def test_process_sets_in_the_optimizer_and_the_collectives(rank, size):
    # Two disjoint sets (even ranks, odd ranks): each averages gradients within itself only.
    if size < 2:
        pytest.skip("needs 2 ranks")
    even, odd = list(range(0, size, 2)), list(range(1, size, 2))
    sets = [kolo.add_process_set(even), kolo.add_process_set(odd)]
    try:
        ps, members = (sets[0], even) if rank % 2 == 0 else (sets[1], odd)
        value = np.full((2,), float(rank), np.float32)
        np.testing.assert_array_equal(numpy(kolo.allreduce(value, name="v", op=kolo.Sum, process_set=ps)),
                                      np.full((2,), float(sum(members)), np.float32))
        np.testing.assert_array_equal(numpy(kolo.allgather(value[None], name="g", process_set=ps)),
                                      np.stack([np.full((2,), float(r), np.float32) for r in members]))
        np.testing.assert_array_equal(numpy(kolo.broadcast(value, members[-1], name="b", process_set=ps)),
                                      np.full((2,), float(members[-1]), np.float32))
        x, y = data()
        xs, ys, share = shard(rank, size, x, y)
        model = bare(11)
        model.compile(optimizer=kolo.DistributedOptimizer(keras.optimizers.SGD(0.1), process_set=ps),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        before = [numpy(w) for w in model.trainable_weights]
        model.fit(xs[:share], ys[:share], batch_size=share, epochs=1, shuffle=False, verbose=0)
        own = _gradients(bare(11), xs[:share], ys[:share])
        mean = [numpy(kolo.allreduce(g, name="ps.ref.%d" % i, process_set=ps)) for i, g in enumerate(own)]
        for w0, w, g in zip(before, model.trainable_weights, mean):
            np.testing.assert_allclose(numpy(w), w0 - 0.1 * g, rtol=0, atol=1e-6)
    finally:
        for s in sets:
            kolo.remove_process_set(s)
