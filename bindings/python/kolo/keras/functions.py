"""Horovod's Keras collectives (horovod.keras' signatures) on values, tensors or nested structures of
them, on Keras' JAX or TensorFlow backend: in a custom training loop, in a callback, or to gather
each rank's losses (`kolo.allgather(losses)`). Each returns a value of the backend's tensor type."""
import numpy as np

from kolo._abi import ADASUM, AVERAGE, INVALID_ARGUMENT, SUM
from kolo._errors import KoloValueError
from kolo._lifecycle import rank as _rank
from kolo._policy.scaling import op_of
from kolo._process_sets import global_process_set
from kolo.keras import _backend
from kolo.keras.compression import Compression


def allreduce(value, name=None, average=None, prescale_factor=1.0, postscale_factor=1.0, op=None,
              compression=Compression.none, process_set=global_process_set):
    """`value` reduced over the ranks: op Average (the default) or Sum (`average=False`, Horovod's
    older spelling, still works). The factors multiply before and after the reduction;
    compression (Compression.fp16, .bf16) applies to floating-point values for the trip."""
    op = op_of(op, average)
    if op not in (AVERAGE, SUM, ADASUM):
        raise ValueError("kolo.keras.allreduce reduces with Average, Sum or Adasum, not op %r" % (op,))
    compressed, context = compression.compress(_as_tensor(value))
    reduced = _backend.allreduce(compressed, name, op, prescale_factor, postscale_factor, process_set)
    return compression.decompress(reduced, context)


def allgather(value, name=None, process_set=global_process_set):
    """Every rank's `value` concatenated along the first dimension, in rank order; the ranks may
    give different first dimensions (outside a compiled function)."""
    return _backend.allgather(_as_tensor(value), name, process_set)


def broadcast(value, root_rank, name=None, process_set=global_process_set):
    """`value` as root_rank has it, on every rank."""
    return _backend.broadcast(_as_tensor(value), root_rank, name, process_set)


def reducescatter(value, name=None, op=AVERAGE, process_set=global_process_set):
    """`value` reduced over the ranks (Average or Sum); this rank gets its block of the rows: the
    first rows % size ranks one row more than the others."""
    if op not in (AVERAGE, SUM):
        raise ValueError("kolo.keras.reducescatter reduces with Average or Sum, not op %r" % (op,))
    return _backend.reducescatter(_as_tensor(value), name, op, process_set=process_set)


def broadcast_variables(variables, root_rank=0, name="broadcast_variables"):
    """Sets each Keras variable in `variables` to its value on root_rank, in one fused request."""
    variables = list(variables)
    if not variables:
        return
    values = _backend.broadcast([v.value for v in variables], root_rank, name)
    for variable, value in zip(variables, values):
        variable.assign(value)


def broadcast_global_variables(root_rank, model=None):
    """Sets every variable of `model` and of its optimizer to root_rank's values.

    Horovod's form without a model broadcast TensorFlow 1's collection of global variables; Keras 3
    keeps no such collection (and Horovod raises in eager mode), so the model is named here:
    `kolo.broadcast_global_variables(0, model)`. In model.fit, BroadcastGlobalVariablesCallback
    does the same at the start of training."""
    if model is None:
        raise KoloValueError(
            "broadcast_global_variables on rank %d: Keras 3 has no collection of global variables; pass the model "
            "whose variables (and its optimizer's) to broadcast: broadcast_global_variables(%d, model), or use "
            "BroadcastGlobalVariablesCallback(%d) in model.fit" % (_rank(), root_rank, root_rank), INVALID_ARGUMENT)
    broadcast_variables(model_and_optimizer_variables(model), root_rank, "broadcast_global_variables")


def model_and_optimizer_variables(model, excluded=(), optimizer=None):
    """The model's variables, then its optimizer's (`optimizer`, else the model's, when it has one
    built), less those in `excluded`."""
    variables = list(model.variables)
    optimizer = optimizer if optimizer is not None else getattr(model, "optimizer", None)
    if optimizer is not None:
        variables += list(optimizer.variables)
    skip = {id(v) for v in excluded}
    return [v for v in variables if id(v) not in skip]


def _as_tensor(value):
    """Python numbers and lists of them as arrays (floats as float32, as tf.constant makes them);
    tensors and nested structures as they are."""
    if isinstance(value, (int, float, bool)) or (isinstance(value, list) and value and
                                                 all(isinstance(v, (int, float)) for v in value)):
        array = np.asarray(value)
        return array.astype(np.float32) if array.dtype == np.float64 else array
    return value
