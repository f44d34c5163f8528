"""kolo.tensorflow.elastic's states at N ranks (outside an elastic launch): sync from rank 0, commit
and restore, a Keras model with its optimizer's variables, and the state as bytes (the restart path's
end to end is tests/system/elastic)."""
import io

import keras
import numpy as np
import tensorflow as tf

import kolo.tensorflow as kolo


def test_variables_sync_commit_and_restore(rank, size):
    v = 1.0 if rank == 0 else 2.0
    variables = [tf.Variable(np.full((2, 2), v)), tf.Variable(np.full((2,), v))]
    state = kolo.elastic.TensorFlowState(variables, batch=20 + rank, epoch=10 + rank)
    state.sync()
    assert [w.numpy().tolist() for w in variables] == [[[1.0, 1.0], [1.0, 1.0]], [1.0, 1.0]]
    assert (state.batch, state.epoch) == (20, 10)
    variables[0].assign(np.array([[1.0, 2.0], [3.0, 4.0]]))
    state.batch = 21
    state.restore()  # the synced values: sync saves
    assert variables[0].numpy().tolist() == [[1.0, 1.0], [1.0, 1.0]] and state.batch == 20
    variables[1].assign([5.0, 6.0])
    state.batch = 22
    state.commit()
    variables[1].assign([0.0, 0.0])
    state.batch = 0
    state.restore()
    assert variables[1].numpy().tolist() == [5.0, 6.0] and state.batch == 22


def test_a_keras_state_takes_the_optimizers_variables_once_built(rank, size):
    keras.utils.set_random_seed(rank)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    optimizer = keras.optimizers.SGD(0.1, momentum=0.9)
    optimizer.build(model.trainable_variables)
    state = kolo.elastic.TensorFlowKerasState(model, optimizer, epoch=rank)
    state.sync()
    keras.utils.set_random_seed(0)
    reference = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    for got, want in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_array_equal(got, want)
    assert state.epoch == 0 and len(state._saved) == len(model.variables) + len(optimizer.variables)
    buffer = io.BytesIO()
    state.serialize(buffer)
    model.layers[0].kernel.assign(np.zeros((3, 2), np.float32))
    state.deserialize(buffer.getvalue())
    for got, want in zip(model.get_weights(), reference.get_weights()):
        np.testing.assert_array_equal(got, want)


def test_run_outside_an_elastic_launch_syncs_and_runs_once(rank):
    state = kolo.elastic.TensorFlowState([tf.Variable([float(rank)])], epoch=rank)

    @kolo.elastic.run
    def train(s):
        return s.epoch

    assert train(state) == 0
