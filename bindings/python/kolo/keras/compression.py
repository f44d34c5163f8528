"""Gradient compression for the trip across ranks, with Horovod's names: Compression.fp16
sends floating-point gradients in 16 bits and gives them back in their own dtype."""
import jax.numpy as jnp


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
        if jnp.issubdtype(tensor.dtype, jnp.floating) and tensor.dtype != cls.wire_dtype:
            return tensor.astype(cls.wire_dtype), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else tensor.astype(ctx)


class FP16Compressor(_CastCompressor):
    wire_dtype = jnp.float16


class BF16Compressor(_CastCompressor):
    wire_dtype = jnp.bfloat16


class Compression:
    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor
