"""kolo.keras.elastic on the test's Keras backend, at N ranks (outside an elastic launch): KerasState's
sync, commit, restore and bytes, and the model.fit callbacks that keep it (the restart path's end to
end is tests/system/elastic)."""
import io

import keras
import numpy as np

import kolo.keras as kolo


def model_at(seed):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.compile(optimizer=keras.optimizers.SGD(0.1, momentum=0.9), loss="mse")
    model.optimizer.build(model.trainable_variables)
    return model


def test_sync_commit_restore_and_bytes(rank, size):
    model = model_at(rank)
    state = kolo.elastic.KerasState(model, epoch=rank)
    state.sync()
    root = model_at(0)
    for got, want in zip(model.get_weights(), root.get_weights()):
        np.testing.assert_array_equal(got, want)
    assert state.epoch == 0 and state.batch == 0
    model.layers[0].kernel.assign(np.ones((3, 2), np.float32))
    state.epoch = 3
    state.commit()
    model.layers[0].kernel.assign(np.zeros((3, 2), np.float32))
    state.epoch = 9
    state.restore()
    assert state.epoch == 3 and model.layers[0].kernel.numpy().tolist() == [[1.0, 1.0]] * 3
    buffer = io.BytesIO()
    state.serialize(buffer)
    model.layers[0].kernel.assign(np.zeros((3, 2), np.float32))
    state.deserialize(buffer.getvalue())
    assert model.layers[0].kernel.numpy().tolist() == [[1.0, 1.0]] * 3


def test_the_fit_callbacks_keep_the_state(rank, size):
    model = model_at(0)
    state = kolo.elastic.KerasState(model, epoch=5)
    commits = []
    state.save = lambda original=state.save: (commits.append((state.epoch, state.batch)), original())[1]
    x, y = np.ones((8, 3), np.float32), np.zeros((8, 2), np.float32)

    @kolo.elastic.run
    def train(s):
        model.fit(x, y, batch_size=2, epochs=2, verbose=0,
                  callbacks=[kolo.elastic.UpdateBatchStateCallback(s), kolo.elastic.UpdateEpochStateCallback(s),
                             kolo.elastic.CommitStateCallback(s, batches_per_commit=3)])
        return s.epoch

    assert train(state) == 7  # epochs counted on from the state's 5
    # 4 batches an epoch: a commit after batch 2 (the third), then at the epoch's end; the batch counter
    # is reset before the end-of-epoch commit, and the epoch moved on.
    assert commits == [(5, 2), (6, 0), (6, 1), (7, 0)], commits
