"""Gradient compression applied on the way into a collective and undone on the way out.

kolo's own compressors also name the compression kolo's engine applies itself (`kolo_code`): a
float32 tensor is then cast to 16 bits in the fusion buffer's pack and back in its unpack, in the
same pass as the scaling, with no cast or copy in Python. Other compressors (subclasses of
Compressor) run their compress/decompress around the collective, as in Horovod.
"""
import torch

from kolo import _core


class Compressor:
    @staticmethod
    def compress(tensor):
        """Returns (tensor to send, context for decompress)."""
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    kolo_code = _core.COMPRESSION_NONE

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


class _CastCompressor(Compressor):
    """Floating-point tensors travel in a 16-bit type, half the bytes; others pass unchanged."""

    wire_dtype = None

    @classmethod
    def compress(cls, tensor):
        if tensor.dtype.is_floating_point and tensor.dtype != cls.wire_dtype:
            return tensor.to(cls.wire_dtype), tensor.dtype
        return tensor, None

    @classmethod
    def decompress(cls, tensor, ctx):
        return tensor if ctx is None else tensor.to(ctx)


class FP16Compressor(_CastCompressor):
    wire_dtype = torch.float16
    kolo_code = _core.COMPRESSION_FP16


class BF16Compressor(_CastCompressor):
    wire_dtype = torch.bfloat16
    kolo_code = _core.COMPRESSION_BF16


def engine_compression(compression, tensor):
    """The compression code kolo's engine applies to `tensor` itself, or None when `compression`
    must run in Python (a compressor of the user's, or a dtype kolo does not compress)."""
    code = getattr(compression, "kolo_code", None)
    if code is None:
        return None
    return code if code == _core.COMPRESSION_NONE or tensor.dtype == torch.float32 else None


class Compression:
    """The compressors, by Horovod's names: Compression.none, Compression.fp16 (and .bf16)."""

    none = NoneCompressor
    fp16 = FP16Compressor
    bf16 = BF16Compressor
