"""Gradient compression with Horovod's names (Compression.none, .fp16, and kolo's .bf16), made once for
every binding from its framework's cast: floating-point tensors travel in a 16-bit type, half the bytes,
and come back in their own dtype; others pass unchanged.

kolo's own compressors also name the compression kolo's engine applies itself (`kolo_code`): a float32
tensor is then cast in the fusion buffer's pack and back in its unpack, with no cast in Python. A binding
whose ops reach the engine through kolo's C ABI asks engine_compression() whether to hand it over; a
compressor of the user's (a subclass of Compressor) always runs around the collective, as in Horovod."""
from kolo._abi import COMPRESSION_BF16, COMPRESSION_FP16, COMPRESSION_NONE


class Compressor:
    """A compressor: compress gives (tensor to send, context), decompress undoes it with the context."""

    @staticmethod
    def compress(tensor):
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    kolo_code = COMPRESSION_NONE

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor


def compression(cast, floating_dtype, fp16, bf16, module):
    """The Compression class of a binding: cast(tensor, dtype) casts; floating_dtype(tensor) is the
    tensor's dtype when it is floating-point, else None; fp16 and bf16 are the framework's 16-bit
    dtypes; `module` names the binding's module (the classes' __module__)."""

    class CastCompressor(Compressor):
        wire_dtype = None

        @classmethod
        def compress(cls, tensor):
            dtype = floating_dtype(tensor)
            if dtype is not None and dtype != cls.wire_dtype:
                return cast(tensor, cls.wire_dtype), dtype
            return tensor, None

        @staticmethod
        def decompress(tensor, ctx):
            return tensor if ctx is None else cast(tensor, ctx)

    class FP16Compressor(CastCompressor):
        wire_dtype = fp16
        kolo_code = COMPRESSION_FP16

    class BF16Compressor(CastCompressor):
        wire_dtype = bf16
        kolo_code = COMPRESSION_BF16

    class Compression:
        """The compressors, by Horovod's names: Compression.none, Compression.fp16 (and .bf16)."""

        none = NoneCompressor
        fp16 = FP16Compressor
        bf16 = BF16Compressor

    for cls in (CastCompressor, FP16Compressor, BF16Compressor, Compression):
        cls.__module__ = module
    return Compression


def engine_compression(compressor, is_float32):
    """The compression code kolo's engine applies itself, or None when `compressor` must run around
    the collective (a compressor of the user's, or a tensor that is not float32: kolo compresses
    float32 only)."""
    code = getattr(compressor, "kolo_code", None)
    if code is None:
        return None
    return code if code == COMPRESSION_NONE or is_float32 else None
