"""Gradient compression (kolo._policy.compression's, made for TensorFlow's casts): Compression.fp16 (and
kolo's bf16) send floating-point tensors in 16 bits and give them back in their own dtype. kolo's
TensorFlow ops carry no compression to the engine, so the cast runs in TensorFlow, around the op."""
import tensorflow as tf

from kolo._policy.compression import Compressor, NoneCompressor, compression  # noqa: F401

Compression = compression(cast=tf.cast,
                          floating_dtype=lambda tensor: tensor.dtype if tensor.dtype.is_floating else None,
                          fp16=tf.float16, bf16=tf.bfloat16, module=__name__)
FP16Compressor, BF16Compressor = Compression.fp16, Compression.bf16
