"""Gradient compression for the trip across ranks, with Horovod's names: Compression.fp16
sends floating-point gradients in 16 bits and gives them back in their own dtype."""
import keras

_FLOATING = ("float16", "bfloat16", "float32", "float64")


class NoneCompressor:
    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class _CastCompressor:
    wire_dtype = None

    @classmethod
    def compress(cls, tensor):
        dtype = keras.backend.standardize_dtype(tensor.dtype)
        if dtype in _FLOATING and dtype != cls.wire_dtype:
            return keras.ops.cast(tensor, cls.wire_dtype), dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else keras.ops.cast(tensor, ctx)


class FP16Compressor(_CastCompressor):
    wire_dtype = "float16"


class BF16Compressor(_CastCompressor):
    wire_dtype = "bfloat16"


class Compression:
    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor
