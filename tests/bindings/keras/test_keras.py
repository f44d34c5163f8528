"""kolo.keras: model.fit with DistributedOptimizer and Horovod's callbacks on N ranks, on the
backend KERAS_BACKEND names."""
import keras
import numpy as np
import pytest

import kolo.keras as kolo

ROWS, BATCH, EPOCHS = 96, 24, 3
# float32 sums in a different order (N half-batch means averaged vs one full-batch mean) drift by
# a few ulps per step; 1e-5 absolute holds with a wide margin over 12 steps.
TOLERANCE = 1e-5


def data():
    rng = np.random.default_rng(3)
    return rng.normal(size=(ROWS, 10)).astype(np.float32), rng.integers(0, 3, ROWS).astype(np.int32)


def make_model(seed, optimizer):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((10,)), keras.layers.Dense(16, activation="relu"), keras.layers.Dense(3)])
    model.compile(optimizer=optimizer, loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    return model


def shard(rank, size, x, y):
    """This rank's part of every batch: rows rank/size .. (rank+1)/size of each."""
    share = BATCH // size
    rows = np.concatenate([np.arange(b + rank * share, b + (rank + 1) * share) for b in range(0, ROWS, BATCH)])
    return x[rows], y[rows], share


def assert_same_on_every_rank(model, size):
    mine = [keras.ops.convert_to_numpy(w) for w in model.weights]
    for own, rank0 in zip(mine, kolo.broadcast(mine, root_rank=0, name="weights")):
        np.testing.assert_array_equal(own, keras.ops.convert_to_numpy(rank0))


def test_fit_on_shards_matches_one_process_on_full_batches(rank, size):
    x, y = data()
    # Every rank initializes differently: BroadcastGlobalVariablesCallback gives all rank 0's weights.
    model = make_model(100 + rank, kolo.DistributedOptimizer(keras.optimizers.SGD(0.05, momentum=0.9)))
    xs, ys, share = shard(rank, size, x, y)
    model.fit(xs, ys, batch_size=share, epochs=EPOCHS, shuffle=False, verbose=0,
              callbacks=[kolo.BroadcastGlobalVariablesCallback(0)])
    assert_same_on_every_rank(model, size)

    reference = make_model(100, keras.optimizers.SGD(0.05, momentum=0.9))
    reference.fit(x, y, batch_size=BATCH, epochs=EPOCHS, shuffle=False, verbose=0)
    for got, want in zip(model.weights, reference.weights):
        np.testing.assert_allclose(keras.ops.convert_to_numpy(got), keras.ops.convert_to_numpy(want), rtol=0,
                                   atol=TOLERANCE)
    assert int(model.optimizer.iterations) == EPOCHS * ROWS // BATCH


def test_fp16_compression_keeps_ranks_identical(rank, size):
    x, y = data()
    optimizer = kolo.DistributedOptimizer(keras.optimizers.Adam(0.01), compression=kolo.Compression.fp16)
    assert isinstance(optimizer, keras.optimizers.Adam)
    model = make_model(200 + rank, optimizer)
    xs, ys, share = shard(rank, size, x, y)
    history = model.fit(xs, ys, batch_size=share, epochs=2, shuffle=False, verbose=0,
                        callbacks=[kolo.BroadcastGlobalVariablesCallback(0)])
    assert_same_on_every_rank(model, size)
    assert history.history["loss"][1] < history.history["loss"][0]


def test_metric_average_callback(rank, size):
    logs = {"loss": float(rank), "accuracy": 1.0 + rank, "note": "text"}
    kolo.MetricAverageCallback().on_epoch_end(0, logs)
    assert logs == {"loss": (size - 1) / 2, "accuracy": 1.0 + (size - 1) / 2, "note": "text"}


class RecordRate(keras.callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.rates = []

    def on_train_batch_begin(self, batch, logs=None):
        self.rates.append(float(keras.ops.convert_to_numpy(self.model.optimizer.learning_rate)))


def test_learning_rate_warmup(rank, size):
    x, y = data()
    model = make_model(300, kolo.DistributedOptimizer(keras.optimizers.SGD(0.1)))
    xs, ys, share = shard(rank, size, x, y)
    steps = ROWS // BATCH
    record = RecordRate()
    model.fit(xs, ys, batch_size=share, epochs=3, shuffle=False, verbose=0,
              callbacks=[kolo.LearningRateWarmupCallback(initial_lr=0.4, warmup_epochs=2), record])
    # Horovod's schedule: lr = initial / size * (e * (size - 1) / warmup + 1), e = epoch + (batch + 1) / steps.
    expected = [0.4 / size * ((e + (b + 1) / steps) * (size - 1) / 2 + 1) for e in range(2) for b in range(steps)]
    expected += [0.4] * steps  # after warmup the rate stays where warmup left it
    np.testing.assert_allclose(record.rates, expected, rtol=1e-6)
    assert_same_on_every_rank(model, size)


def test_distributed_optimizer_refuses_keras_2s_optimizers_saying_why():
    legacy = type("SGD", (), {"__module__": "tf_keras.src.optimizers.legacy.gradient_descent"})()
    with pytest.raises(ValueError, match=r"kolo.keras works with Keras 3; this optimizer "
                                         r"\(tf_keras.src.optimizers.legacy.gradient_descent.SGD\) is Keras 2's"):
        kolo.DistributedOptimizer(legacy)


def test_distributed_optimizer_rejects_other_ops():
    with pytest.raises(ValueError, match="Average, Sum or Adasum"):
        kolo.DistributedOptimizer(keras.optimizers.SGD(0.1), op=3)
