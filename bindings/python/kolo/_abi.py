"""kolo's extension module (kolo._C, over the C ABI only) and the C ABI's codes, as in include/kolo/c_api.h.

Frameworks describe their tensors as plain tuples (pointer, dtype code, shape, strides, device type,
device index, stream) and get results back as byte buffers they wrap without copying.
"""
try:
    from kolo import _C
except ImportError as e:  # pragma: no cover - a broken install, reported clearly
    raise ImportError(
        "kolo's extension module kolo._C could not be loaded (%s). Install kolo (pip install . in its source "
        "tree), or build it (.ci/setup) and put build/python on PYTHONPATH." % e) from e

# Status codes, as in include/kolo/c_api.h.
(OK, INVALID_ARGUMENT, NOT_INITIALIZED, MISMATCH, ABORTED, INTERNAL, UNSUPPORTED, TIMEOUT, PEERS_FAILED,
 UNKNOWN_HANDLE) = range(10)

# Reduce ops, as in include/kolo/c_api.h.
SUM, AVERAGE, MIN, MAX, PRODUCT, ADASUM = range(6)

# Dtype codes, as in include/kolo/c_api.h.
UINT8, INT8, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64, INT16, BOOL, UINT16 = range(11)
CPU, CUDA = 0, 1

# Compressions, as in include/kolo/c_api.h.
COMPRESSION_NONE, COMPRESSION_FP16, COMPRESSION_BF16 = range(3)
