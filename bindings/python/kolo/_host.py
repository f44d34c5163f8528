"""Collectives on NumPy arrays in host memory, through the C ABI: what frameworks without a binding
of their own hand over (Keras' TensorFlow backend does, from inside tf.numpy_function). Each call
takes a list of arrays, enqueues them together (kolo fuses them) and returns once all are done.
`set_id`: the process set each runs in (0: every rank)."""
import numpy as np

from kolo._abi import (BFLOAT16, BOOL, COMPRESSION_NONE, CPU, FLOAT16, FLOAT32, FLOAT64, INT16, INT32, INT64, INT8,
                       INVALID_ARGUMENT, OK, UINT16, UINT8, _C)
from kolo._errors import KoloError, KoloValueError, error_for

_CODES = {"uint8": UINT8, "int8": INT8, "uint16": UINT16, "int16": INT16, "int32": INT32,
          "int64": INT64,
          "float16": FLOAT16, "bfloat16": BFLOAT16, "float32": FLOAT32, "float64": FLOAT64,
          "bool": BOOL}


def _describe(array, name):
    code = _CODES.get(array.dtype.name)
    if code is None:
        raise KoloValueError("tensor '%s' on rank %d: input has dtype %s; kolo supports %s"
                             % (name, _C.rank(), array.dtype.name, ", ".join(_CODES)), INVALID_ARGUMENT)
    return (array.ctypes.data, code, tuple(array.shape), (), CPU, 0, 0)


def _wait_all(submissions):
    """Enqueues the ops (`submissions` yields each one's handle as it enqueues it) and waits for every op
    enqueued, even after a failure or a call refused at once (kolo._C raises then), so none is left behind
    writing into arrays already let go; returns their outputs."""
    handles, refused = [], None
    try:
        for h in submissions:
            handles.append(h)
    except KoloError as e:
        refused = e
    error, outputs = None, []
    for h in handles:
        code, message, output = _C.wait(h)
        outputs.append(output)
        if code != OK and error is None:
            error = error_for(code, message)
    error = error or refused  # the first failure in order, as when a refusal was a failed handle
    if error is not None:
        raise error
    return outputs


def allreduce(arrays, names, op, prescale_factor=1.0, postscale_factor=1.0, set_id=0):
    inputs = [np.asarray(a, order="C") for a in arrays]  # not ascontiguousarray: it makes 0-d 1-d
    outputs = [np.empty_like(a) for a in inputs]
    _wait_all(_C.allreduce(n, _describe(i, n), _describe(o, n), op, float(prescale_factor),
                           float(postscale_factor), set_id, COMPRESSION_NONE, False)
              for i, o, n in zip(inputs, outputs, names))
    return outputs


# Broadcast only moves bytes: other dtypes travel as a supported dtype of the same width (Keras
# keeps its seed generators' state in uint32).
_SAME_WIDTH = {1: np.dtype(np.uint8), 2: np.dtype(np.float16), 4: np.dtype(np.int32), 8: np.dtype(np.int64)}


def _as_bits(array):
    if array.dtype.name in _CODES or array.dtype.kind == "c" or array.dtype.itemsize not in _SAME_WIDTH:
        return array
    return array.view(_SAME_WIDTH[array.dtype.itemsize])


def broadcast(arrays, names, root_rank, set_id=0):
    inputs = [np.asarray(a, order="C") for a in arrays]  # not ascontiguousarray: it makes 0-d 1-d
    outputs = [np.empty_like(a) for a in inputs]
    _wait_all(_C.broadcast_async(n, _describe(_as_bits(i), n), _describe(_as_bits(o), n), root_rank,
                                 process_set=set_id) for i, o, n in zip(inputs, outputs, names))
    return outputs


def _check_rows(arrays, names, op):
    for array, name in zip(arrays, names):
        if array.ndim == 0:
            raise KoloValueError("tensor '%s' on rank %d: %s needs at least one dimension (the rows); reshape "
                                 "a scalar to (1,)" % (name, _C.rank(), op), INVALID_ARGUMENT)


def allgather(arrays, names, set_id=0):
    """Every rank's rows (first dimension, which may differ per rank) concatenated in rank order."""
    inputs = [np.asarray(a, order="C") for a in arrays]
    _check_rows(inputs, names, "allgather")
    carried = [_as_bits(i) for i in inputs]
    outputs = _wait_all(_C.allgather_async(n, _describe(c, n), process_set=set_id) for c, n in zip(carried, names))
    results = []
    for out, array, carrier in zip(outputs, inputs, carried):
        shape = tuple(out.shape)
        data = np.empty(shape, carrier.dtype) if out.size_bytes == 0 else \
            np.frombuffer(out, carrier.dtype).reshape(shape)  # over kolo's buffer, which it keeps alive
        results.append(data.view(array.dtype))
    return results


def set_place(set_id):
    """This rank's place in the set and the set's size."""
    code, message, ranks, rank = _C.process_set_ranks(set_id)
    if code != OK:
        raise error_for(code, message)
    return rank, len(ranks)


def reducescatter(arrays, names, op, prescale_factor=1.0, postscale_factor=1.0, set_id=0):
    """Each array reduced over ranks; this rank gets its block of rows (kolo_reducescatter_rows)."""
    inputs = [np.asarray(a, order="C") for a in arrays]
    _check_rows(inputs, names, "reducescatter")
    rank, size = set_place(set_id)
    outputs = [np.empty((_C.reducescatter_rows(a.shape[0], rank, size),) + a.shape[1:], a.dtype) for a in inputs]
    _wait_all(_C.reducescatter_async(n, _describe(i, n), _describe(o, n), op, prescale_factor, postscale_factor,
                                     process_set=set_id) for i, o, n in zip(inputs, outputs, names))
    return outputs


def barrier(set_id=0):
    _wait_all([_C.barrier_async(set_id)])
