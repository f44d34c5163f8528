"""load_model: a saved Keras model, its optimizer made distributed again with its state."""
import keras

from kolo._abi import AVERAGE
from kolo.keras.compression import Compression
from kolo.keras.optimizer import _make_distributed


def load_model(filepath, custom_optimizers=None, custom_objects=None, compression=Compression.none,
               legacy_opts=False):
    """Loads a model saved by model.save (.keras, or .h5) and wraps its optimizer in
    DistributedOptimizer, keeping the optimizer's state (iterations, momentums, ...), so that training
    resumes where it stopped on every rank. Every rank loads the file; load it from storage they all
    see, or broadcast the weights after (BroadcastGlobalVariablesCallback).

    custom_optimizers: optimizer classes of your own the file uses (added to custom_objects).
    custom_objects: as for keras.saving.load_model.
    compression: for the wrapped optimizer's gradients.
    legacy_opts: Horovod's switch for tf.keras' legacy optimizers, which Keras 3 does not have.
    """
    if legacy_opts:
        raise ValueError("load_model: legacy_opts=True asks for tf.keras' legacy optimizers, which Keras 3 does not "
                         "have; leave it False")
    objects = dict(custom_objects or {})
    for cls in custom_optimizers or ():
        objects.setdefault(cls.__name__, cls)
    model = keras.saving.load_model(filepath, custom_objects=objects or None)
    if getattr(model, "optimizer", None) is not None:
        _make_distributed(model.optimizer, None, compression, AVERAGE, 1.0, True)
    return model
