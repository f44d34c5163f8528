"""Gradient compression (kolo._policy.compression's, made for Keras' casts), with Horovod's names:
Compression.fp16 sends floating-point gradients in 16 bits and gives them back in their own dtype.
The cast runs in Keras, around the collective (on either backend, as kolo.jax's and kolo.tensorflow's do)."""
import keras

from kolo._policy.compression import Compressor, NoneCompressor, compression  # noqa: F401

_FLOATING = ("float16", "bfloat16", "float32", "float64")


def _floating_dtype(tensor):
    dtype = keras.backend.standardize_dtype(tensor.dtype)
    return dtype if dtype in _FLOATING else None


Compression = compression(cast=keras.ops.cast, floating_dtype=_floating_dtype, fp16="float16", bf16="bfloat16",
                          module=__name__)
FP16Compressor, BF16Compressor = Compression.fp16, Compression.bf16
