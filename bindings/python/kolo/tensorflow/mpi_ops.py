"""kolo's collectives as TensorFlow ops (kolo_tf_ops.so, src/tf_*_ops.cc), with Horovod's names and
signatures, and their gradients (the formulas kolo.torch uses). They run eagerly and inside
tf.function. Errors are TensorFlow's (tf.errors.*), their message kolo's ("kolo: tensor 'x' ...").

Ops without a name are numbered per kind and process set, in call order (eagerly) or trace order
(tf.function), as kolo._policy.naming numbers them: the same on every rank running the same program;
pass name= where ranks could trace in different orders.
"""
import os

import tensorflow as tf

from kolo import _lifecycle, _process_sets
from kolo._abi import INVALID_ARGUMENT, OK, _C
from kolo._errors import KoloValueError, error_for
from kolo._policy import scaling
from kolo._policy.naming import Namer
from kolo._policy.scaling import OP_NAMES as _OP_NAMES, Adasum, Average, Max, Min, Product, Sum  # noqa: F401
from kolo._process_sets import ProcessSet, add_process_set, global_process_set, remove_process_set  # noqa: F401

_LIBRARY = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kolo_tf_ops.so")
try:
    _ops = tf.load_op_library(_LIBRARY)
except (tf.errors.NotFoundError, OSError) as e:  # e.g. kolo built against another TensorFlow
    from kolo import _build_info, _frameworks
    raise ImportError("kolo.tensorflow's ops (%s) could not be loaded into TensorFlow %s (kolo was built against %s): "
                      "%s. To build them against this TensorFlow, %s"
                      % (_LIBRARY, tf.__version__, _build_info.FRAMEWORKS["tensorflow"][1], e, _frameworks.rebuild())) from e

# Inside tf.function, TensorFlow runs stateful ops in program order, each after the one before has
# finished: kolo's ops would then reach the engine one at a time and never fuse. They need not be
# ordered (kolo matches ops across ranks by name), but must run even when their result is unused, as
# every rank must submit them: what TensorFlow's "must run, order insensitive" ops get.
_KOLO_OPS = frozenset(("KoloAllreduce", "KoloGroupedAllreduce", "KoloAllgather", "KoloBroadcast", "KoloAlltoall", "KoloReducescatter",
                       "KoloJoin", "KoloBarrier"))
try:
    from tensorflow.python.framework import auto_control_deps as _acd
    _acd.MUST_RUN_ORDER_INSENSITIVE_STATEFUL_OPS = frozenset(_acd.MUST_RUN_ORDER_INSENSITIVE_STATEFUL_OPS) | _KOLO_OPS
except (ImportError, AttributeError):  # pragma: no cover - another TensorFlow: program order, correct but slower
    pass

_SUPPORTED = (tf.uint8, tf.int8, tf.uint16, tf.int16, tf.int32, tf.int64, tf.float16, tf.bfloat16, tf.float32,
              tf.float64, tf.bool)
_namer = Namer("tf")


def _rank():
    return _lifecycle.rank() if _lifecycle.is_initialized() else -1


def _name(name, kind, process_set=None):
    return _namer.name(name, kind, process_set)


def _check(tensor, name, kind, rows=False):
    tensor = tf.convert_to_tensor(tensor)
    if tensor.dtype not in _SUPPORTED:
        raise KoloValueError("%s of tensor '%s' on rank %d: dtype %s; kolo supports %s" % (
            kind, name, _rank(), tensor.dtype.name, ", ".join(t.name for t in _SUPPORTED)), INVALID_ARGUMENT)
    if rows and tensor.shape.rank == 0:
        raise KoloValueError("%s of tensor '%s' on rank %d: needs at least one dimension (the rows); reshape a scalar "
                             "to (1,)" % (kind, name, _rank()), INVALID_ARGUMENT)
    return tensor


_op_of = scaling.op_of


def _set_place(set_id):
    """This rank's place in the set and the set's size."""
    code, message, ranks, rank = _C.process_set_ranks(set_id)
    if code != OK:
        raise error_for(code, message)
    return rank, len(ranks)


def _temp_set(set_id):
    ps = ProcessSet([])
    ps.process_set_id = set_id
    return ps


# ---- the raw ops ---------------------------------------------------------------------------------

def _allreduce(tensor, name=None, op=Sum, prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set):
    name = _name(name, "allreduce", process_set)
    tensor = _check(tensor, name, "allreduce")
    if op not in _OP_NAMES:
        raise KoloValueError("allreduce of tensor '%s' on rank %d: unknown op %r" % (name, _rank(), op),
                             INVALID_ARGUMENT)
    return _ops.kolo_allreduce(tensor, tensor_name=name, reduce_op=int(op), prescale_factor=float(prescale_factor),
                               postscale_factor=float(postscale_factor),
                               process_set_id=_process_sets.set_id(process_set, "allreduce of tensor '%s'" % name))


@tf.RegisterGradient("KoloAllreduce")
def _allreduce_grad(op, grad):
    """The allreduce of the gradients, same op and scaling (Sum and Average)."""
    reduce_op = op.get_attr("reduce_op")
    scaling.check_differentiable(reduce_op)
    return _ops.kolo_allreduce(grad, tensor_name=_attr_name(op) + ".grad", reduce_op=reduce_op,
                               prescale_factor=op.get_attr("prescale_factor"),
                               postscale_factor=op.get_attr("postscale_factor"),
                               process_set_id=op.get_attr("process_set_id"))


def _grouped_allreduce(tensors, name=None, op=Sum, prescale_factor=1.0, postscale_factor=1.0,
                       process_set=global_process_set):
    """One op reducing every tensor of `tensors` (tensor i named "<name>.<i>"): they reach kolo together
    and TensorFlow waits for one completion, as Horovod's grouped allreduce."""
    name = _name(name, "allreduce", process_set)
    tensors = [_check(t, "%s.%d" % (name, i), "allreduce") for i, t in enumerate(tensors)]
    if op not in _OP_NAMES:
        raise KoloValueError("allreduce of tensors '%s.*' on rank %d: unknown op %r" % (name, _rank(), op),
                             INVALID_ARGUMENT)
    if not tensors:
        return []
    return _ops.kolo_grouped_allreduce(
        tensors, tensor_name=name, reduce_op=int(op), prescale_factor=float(prescale_factor),
        postscale_factor=float(postscale_factor),
        process_set_id=_process_sets.set_id(process_set, "allreduce of tensors '%s.*'" % name))


@tf.RegisterGradient("KoloGroupedAllreduce")
def _grouped_allreduce_grad(op, *grads):
    """The grouped allreduce of the gradients, same op and scaling (Sum and Average)."""
    reduce_op = op.get_attr("reduce_op")
    scaling.check_differentiable(reduce_op)
    # An output nothing depended on has no gradient; every rank still sends its share (zeros).
    grads = [tf.zeros_like(out) if g is None else g for g, out in zip(grads, op.outputs)]
    return _ops.kolo_grouped_allreduce(grads, tensor_name=_attr_name(op) + ".grad", reduce_op=reduce_op,
                                       prescale_factor=op.get_attr("prescale_factor"),
                                       postscale_factor=op.get_attr("postscale_factor"),
                                       process_set_id=op.get_attr("process_set_id"))


def _attr_name(op):
    name = op.get_attr("tensor_name")
    return name.decode() if isinstance(name, bytes) else name


def allgather(tensor, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Every rank's `tensor` concatenated along the first dimension (which may differ per rank), in
    rank order. Gradient: this rank's rows of the gradients averaged over the ranks (Horovod's)."""
    name = _name(name, "allgather", process_set)
    tensor = _check(tensor, name, "allgather", rows=True)
    return _ops.kolo_allgather(tensor, tensor_name=name,
                               process_set_id=_process_sets.set_id(process_set, "allgather of tensor '%s'" % name))


@tf.RegisterGradient("KoloAllgather")
def _allgather_grad(op, grad):
    set_id, name = op.get_attr("process_set_id"), _attr_name(op)
    averaged = _ops.kolo_allreduce(grad, tensor_name=name + ".grad", reduce_op=Average, process_set_id=set_id)
    rows = tf.shape(op.inputs[0], out_type=tf.int64)[:1]
    every = _ops.kolo_allgather(rows, tensor_name=name + ".grad.rows", process_set_id=set_id)
    rank, _ = _set_place(set_id)
    offset = tf.reduce_sum(every[:rank])
    return averaged[offset:offset + rows[0]]


def grouped_allgather(tensors, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Allgathers of several tensors, enqueued together (kolo negotiates them in one round)."""
    names = _group_names(name, len(tensors), "allgather", process_set)
    return [allgather(t, n, process_set=process_set) for t, n in zip(tensors, names)]


def broadcast(tensor, root_rank, name=None, ignore_name_scope=False, process_set=global_process_set):
    """`root_rank`'s `tensor` (a job rank, in the process set) on every rank. Gradient: the gradients
    averaged over the ranks at the root, zero elsewhere (Horovod's)."""
    name = _name(name, "broadcast", process_set)
    tensor = _check(tensor, name, "broadcast")
    return _ops.kolo_broadcast(tensor, tensor_name=name, root_rank=int(root_rank),
                               process_set_id=_process_sets.set_id(process_set, "broadcast of tensor '%s'" % name))


@tf.RegisterGradient("KoloBroadcast")
def _broadcast_grad(op, grad):
    averaged = _ops.kolo_allreduce(grad, tensor_name=_attr_name(op) + ".grad", reduce_op=Average,
                                   process_set_id=op.get_attr("process_set_id"))
    return averaged if _lifecycle.rank() == op.get_attr("root_rank") else averaged * 0


def broadcast_(variables, root_rank, name=None, process_set=global_process_set):
    """Sets each of `variables` to its value on root_rank, in place; returns them (in a TensorFlow 1
    graph, tensors that do the assignment when the session runs them, as Horovod's)."""
    variables = list(variables) if isinstance(variables, (list, tuple)) else [variables]
    base = _name(name, "broadcast_", process_set)
    assigned = [v.assign(broadcast(v.read_value() if hasattr(v, "read_value") else v, root_rank,
                                   "%s.%d" % (base, i), process_set=process_set))
                for i, v in enumerate(variables)]
    return variables if tf.executing_eagerly() or tf.inside_function() else assigned


def alltoall(tensor, splits=None, name=None, ignore_name_scope=False, process_set=global_process_set):
    """Rows splits[r] of `tensor` go to rank r of the set (evenly without splits); returns the rows
    received, and with splits given also how many came from each rank (Horovod's). Gradient: an
    alltoall back with the received splits."""
    name = _name(name, "alltoall", process_set)
    tensor = _check(tensor, name, "alltoall", rows=True)
    splits_ = tf.convert_to_tensor(splits) if splits is not None else tf.constant([], dtype=tf.int32)
    output, received = _ops.kolo_alltoall(tensor, splits_, tensor_name=name, process_set_id=_process_sets.set_id(
        process_set, "alltoall of tensor '%s'" % name))
    return (output, received) if splits is not None else output


@tf.RegisterGradient("KoloAlltoall")
def _alltoall_grad(op, grad, _received_grad):
    back, _ = _ops.kolo_alltoall(grad, op.outputs[1], tensor_name=_attr_name(op) + ".grad",
                                 process_set_id=op.get_attr("process_set_id"))
    return back, None


def _reducescatter(tensor, name=None, op=Sum, prescale_factor=1.0, postscale_factor=1.0,
                   process_set=global_process_set):
    name = _name(name, "reducescatter", process_set)
    tensor = _check(tensor, name, "reducescatter", rows=True)
    if op not in (Sum, Average):
        raise KoloValueError("reducescatter of tensor '%s' on rank %d: reduces with Average or Sum, not op %r"
                             % (name, _rank(), op), INVALID_ARGUMENT)
    return _ops.kolo_reducescatter(tensor, tensor_name=name, reduce_op=int(op), prescale_factor=float(prescale_factor),
                                   postscale_factor=float(postscale_factor),
                                   process_set_id=_process_sets.set_id(process_set,
                                                                       "reducescatter of tensor '%s'" % name))


@tf.RegisterGradient("KoloReducescatter")
def _reducescatter_grad(op, grad):
    """The allgather of the blocks' gradients, scaled as the forward was and, for Sum, multiplied by
    the set's size: Horovod's formula, as kolo.torch."""
    set_id = op.get_attr("process_set_id")
    gathered = _ops.kolo_allgather(grad, tensor_name=_attr_name(op) + ".grad", process_set_id=set_id)
    scale = op.get_attr("prescale_factor") * op.get_attr("postscale_factor")
    if op.get_attr("reduce_op") == Sum:
        scale *= _set_place(set_id)[1]
    return gathered * tf.cast(scale, gathered.dtype) if scale != 1.0 else gathered


def _group_names(name, count, kind, process_set=None):
    base = _name(name, kind, process_set)
    return ["%s.%d" % (base, i) for i in range(count)]


def join():
    """This rank has no more data: until every rank has joined, it takes part in the others'
    collectives with the op's identity (see kolo.torch.join). Returns the last rank to join."""
    return _ops.kolo_join()


def barrier(process_set=global_process_set):
    """Returns once every rank (of the process set) has called it."""
    _ops.kolo_barrier(process_set_id=_process_sets.set_id(process_set, "barrier"))


# Horovod's tensor forms of the queries (constants: kolo's job does not change size while it runs).
def size_op(process_set_id=0, name=None):
    return tf.constant(_set_place(process_set_id)[1], dtype=tf.int32, name=name)


def local_size_op(name=None):
    return tf.constant(_lifecycle.local_size(), dtype=tf.int32, name=name)


def rank_op(name=None):
    return tf.constant(_lifecycle.rank(), dtype=tf.int32, name=name)


def local_rank_op(name=None):
    return tf.constant(_lifecycle.local_rank(), dtype=tf.int32, name=name)


def process_set_included_op(process_set_id=0, name=None):
    return tf.constant(1 if _set_place(process_set_id)[0] >= 0 else 0, dtype=tf.int32, name=name)
