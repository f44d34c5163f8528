"""Gradient compression (kolo._policy.compression's, made for torch's casts). kolo.torch's ops reach the
engine through kolo's C ABI, so kolo's own fp16 and bf16 run in its pack and unpack (engine_compression)."""
import torch

from kolo._policy.compression import Compressor, NoneCompressor, compression  # noqa: F401 (users subclass Compressor)

Compression = compression(cast=lambda tensor, dtype: tensor.to(dtype),
                          floating_dtype=lambda tensor: tensor.dtype if tensor.dtype.is_floating_point else None,
                          fp16=torch.float16, bf16=torch.bfloat16, module=__name__)
FP16Compressor, BF16Compressor = Compression.fp16, Compression.bf16
