"""Gradient compression for kolo.jax (kolo._policy.compression's, made for jax.numpy's casts), Horovod's
names: Compression.fp16 (and .bf16) send floating-point arrays in 16 bits and give them back in their own
dtype. Compress before the collective and decompress after (kolo.jax's collectives take pytrees:
jax.tree_util.tree_map the compressor over one)."""
import jax.numpy as jnp

from kolo._policy.compression import Compressor, NoneCompressor, compression  # noqa: F401

Compression = compression(cast=lambda array, dtype: jnp.asarray(array).astype(dtype),
                          floating_dtype=lambda array: (jnp.asarray(array).dtype
                                                        if jnp.issubdtype(jnp.asarray(array).dtype, jnp.floating)
                                                        else None),
                          fp16=jnp.dtype(jnp.float16), bf16=jnp.dtype(jnp.bfloat16), module=__name__)
FP16Compressor, BF16Compressor = Compression.fp16, Compression.bf16
