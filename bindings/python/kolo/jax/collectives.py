"""kolo's collectives on JAX arrays and pytrees, inside jax.jit and outside it.

A pytree travels as one XLA custom call with every leaf as a buffer: kolo enqueues the leaves
together, negotiates them in one round and fuses them into few collectives. Each leaf goes under a
name built from the call's name and the leaf's path in the tree (``grads['dense']['kernel']``), the
name kolo's errors give. Outside jit the call runs at once on the concrete arrays and raises
KoloError on failure; inside jit it is part of the compiled program and fails it with XLA's
JaxRuntimeError, whose message is kolo's.
"""
import functools

import jax
import jax.numpy as jnp
import numpy as np

from kolo import _lifecycle, _process_sets
from kolo._abi import ABORTED, INTERNAL, INVALID_ARGUMENT, MISMATCH, OK, PEERS_FAILED, TIMEOUT, UNSUPPORTED, _C
from kolo._errors import KoloError, KoloValueError, error_for
from kolo._policy.naming import Namer
from kolo._policy.scaling import OP_NAMES as _OP_NAMES, Adasum, Average, Max, Min, Product, Sum  # noqa: F401
from kolo._process_sets import global_process_set
from kolo.jax import _ffi


_SUPPORTED = tuple(jnp.dtype(t) for t in (jnp.uint8, jnp.int8, jnp.uint16, jnp.int16, jnp.int32, jnp.int64,
                                          jnp.float16, jnp.bfloat16, jnp.float32, jnp.float64, jnp.bool_))
_SUPPORTED_TEXT = "uint8, int8, uint16, int16, int32, int64, float16, bfloat16, float32, float64, bool"
# Unnamed calls are numbered per kind and process set in call (or trace) order (kolo._policy.naming),
# which is the same on every rank running the same program; pass name= where ranks could trace
# functions in different orders.
_namer = Namer("jax")

# XLA's status names, as the handlers map kolo's codes to them (src/jax_ffi.cc).
_CODES = {"INVALID_ARGUMENT": INVALID_ARGUMENT, "FAILED_PRECONDITION": MISMATCH,
          "ABORTED": ABORTED, "UNIMPLEMENTED": UNSUPPORTED, "DEADLINE_EXCEEDED": TIMEOUT,
          "UNAVAILABLE": PEERS_FAILED}


def _rank():
    return _lifecycle.rank() if _lifecycle.is_initialized() else -1


# Collectives that only move bytes (broadcast, allgather) carry other dtypes as a supported dtype
# of the same width: Keras' uint32 seed-generator state.
_SAME_WIDTH = {1: jnp.dtype(jnp.uint8), 2: jnp.dtype(jnp.float16), 4: jnp.dtype(jnp.int32), 8: jnp.dtype(jnp.int64)}


def _as_bits(leaf):
    carrier = _SAME_WIDTH.get(leaf.dtype.itemsize)
    if carrier is None or jnp.issubdtype(leaf.dtype, jnp.complexfloating):
        return None
    return jax.lax.bitcast_convert_type(leaf, carrier)


def _from_bits(leaf, dtype):
    if dtype is None:
        return leaf
    return jax.lax.bitcast_convert_type(leaf, dtype)


def _flatten(tree, name, op, process_set, moves_bytes=False):
    """The tree's leaves as arrays kolo takes, their names, and for each the dtype it was carried
    as bits for (None: unchanged)."""
    if not _lifecycle.is_initialized():
        raise ValueError("kolo is not initialized: call kolo.jax.init() before %s()" % op)
    pairs, treedef = jax.tree_util.tree_flatten_with_path(tree)
    base = _namer.name(name, op, process_set)
    leaves, names, carried = [], [], []
    for path, leaf in pairs:
        leaf_name = base + jax.tree_util.keystr(path)
        if "\n" in leaf_name:
            raise KoloValueError("tensor %r on rank %d: a name may not contain a newline" % (leaf_name, _rank()),
                                 INVALID_ARGUMENT)
        if not isinstance(leaf, jax.Array):
            leaf = jnp.asarray(leaf)
        original = None
        if leaf.dtype not in _SUPPORTED and moves_bytes:
            bits = _as_bits(leaf)
            if bits is not None:
                leaf, original = bits, leaf.dtype
        if leaf.dtype not in _SUPPORTED:
            raise KoloValueError("tensor '%s' on rank %d: input has dtype %s; kolo supports %s"
                                 % (leaf_name, _rank(), leaf.dtype, _SUPPORTED_TEXT), INVALID_ARGUMENT)
        leaves.append(leaf)
        names.append(leaf_name)
        carried.append(original)
    return base, leaves, names, carried, treedef


def _traced(leaves):
    return any(isinstance(leaf, jax.core.Tracer) for leaf in leaves)


def _kolo_error(error):
    """XLA's error from a failed handler as kolo's: 'FAILED_PRECONDITION: kolo: tensor ...'."""
    text = str(error)
    head, sep, message = text.partition("kolo: ")
    if not sep:
        return None
    code = next((c for status, c in _CODES.items() if status in head), INTERNAL)
    return error_for(code, message.strip())


def _call(kind, leaves, results, names, in_place=False, **attributes):
    # in_place: each result may take its input's buffer. Inside a compiled step the input is
    # usually a temporary (a gradient just computed), so XLA hands it over and kolo reduces it
    # where it lies; where the input is still needed, XLA copies it first.
    aliases = {i: i for i in range(len(leaves))} if in_place else None
    call = jax.ffi.ffi_call(_ffi.target(kind), results, has_side_effect=True, input_output_aliases=aliases)
    if _traced(leaves):
        return list(call(*leaves, names="\n".join(names), **attributes))
    try:
        # Outside jit a collective is done when it returns, as in every other kolo binding.
        return list(jax.block_until_ready(call(*leaves, names="\n".join(names), **attributes)))
    except jax.errors.JaxRuntimeError as e:
        mapped = _kolo_error(e)
        if mapped is None:
            raise
        raise mapped from None


def _members(set_id):
    """The set's job ranks, and this rank's place among them."""
    code, message, ranks, rank = _C.process_set_ranks(set_id)
    if code != OK:
        raise error_for(code, message)
    return ranks, rank


def _check_scaling(leaves, names, prescale_factor, postscale_factor):
    if prescale_factor == 1.0 and postscale_factor == 1.0:
        return
    for leaf, leaf_name in zip(leaves, names):
        if leaf.dtype == jnp.bool_:
            raise KoloValueError("tensor '%s' on rank %d: prescale and postscale factors do not apply to bool "
                                 "tensors (their reductions are logical)" % (leaf_name, _rank()), INVALID_ARGUMENT)


def allreduce(tree, op=Average, name=None, prescale_factor=1.0, postscale_factor=1.0,
              process_set=global_process_set):
    """Reduces every leaf of `tree` (an array or any pytree of arrays) across ranks and returns a
    tree of the results. op: Average (the default; integers truncate), Sum, Min, Max, Product or
    Adasum (floating-point leaves, each combined with its own coefficients); bools reduce logically (Sum, Average, Max: or; Min, Product: and). The factors multiply before
    and after the reduction (integers: truncated; not for bools). process_set: the ranks it runs
    among (a registered ProcessSet; every rank by default)."""
    _, leaves, names, _, treedef = _flatten(tree, name, "allreduce", process_set)
    set_id = _process_sets.set_id(process_set, "allreduce of tensor '%s'" % (names[0] if names else name))
    if not leaves:
        return tree
    if op not in (Sum, Average, Min, Max, Product, Adasum):
        raise KoloValueError("tensor '%s' on rank %d: unknown reduce op %r" % (names[0], _rank(), op),
                             INVALID_ARGUMENT)
    _check_scaling(leaves, names, prescale_factor, postscale_factor)
    outs = _reduce(tuple(leaves), tuple(names), int(op), float(prescale_factor), float(postscale_factor), set_id)
    return jax.tree_util.tree_unflatten(treedef, list(outs))


# Differentiable: the total loss is the sum of every rank's loss, so the gradient of a Sum or
# Average allreduce is the same allreduce (same scaling) of the ranks' gradients, as in kolo.torch.
@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3, 4, 5))
def _reduce(leaves, names, op, prescale, postscale, set_id):
    results = [jax.ShapeDtypeStruct(leaf.shape, leaf.dtype) for leaf in leaves]
    return tuple(_call("allreduce", list(leaves), results, list(names), in_place=True, op=np.int32(op),
                       prescale=np.float64(prescale), postscale=np.float64(postscale),
                       process_set=np.int32(set_id)))


def _reduce_forward(leaves, names, op, prescale, postscale, set_id):
    return _reduce(leaves, names, op, prescale, postscale, set_id), None


def _reduce_backward(names, op, prescale, postscale, set_id, _, cotangents):
    if op not in (Sum, Average):
        raise NotImplementedError("tensor '%s' on rank %d: kolo differentiates Sum and Average allreduces, not %s"
                                  % (names[0], _rank(), _OP_NAMES[op]))
    # Integer leaves have no gradient: their cotangents are float0 zeros, handed back as they are.
    floating = [i for i, ct in enumerate(cotangents) if ct.dtype != jax.dtypes.float0]
    reduced = _reduce(tuple(cotangents[i] for i in floating), tuple(names[i] + ".grad" for i in floating), op,
                      prescale, postscale, set_id) if floating else ()
    grads = list(cotangents)
    for i, g in zip(floating, reduced):
        grads[i] = g
    return (tuple(grads),)


_reduce.defvjp(_reduce_forward, _reduce_backward)


def allgather(tree, name=None, process_set=global_process_set):
    """Concatenates every leaf's rows (first dimension) across ranks, in rank order. Any dtype
    that is not complex travels (as bits of the same width where kolo lacks it). Outside jit
    the ranks may give different row counts; inside jit the result's shape is fixed when the
    function is traced, so every rank must give the same shape."""
    base, leaves, names, carried, treedef = _flatten(tree, name, "allgather", process_set, moves_bytes=True)
    if not leaves:
        return tree
    for leaf, leaf_name in zip(leaves, names):
        if leaf.ndim == 0:
            raise KoloValueError("tensor '%s' on rank %d: allgather needs at least one dimension (the rows it "
                                 "concatenates); reshape a scalar to (1,)" % (leaf_name, _rank()),
                                 INVALID_ARGUMENT)
    set_id = _process_sets.set_id(process_set, "allgather of tensor '%s'" % names[0])
    ranks = _lifecycle.size() if set_id == 0 else len(_members(set_id)[0])
    if _traced(leaves):
        rows = [leaf.shape[0] * ranks for leaf in leaves]
    else:
        # Concrete arrays: learn every rank's row counts first, in one small gather.
        counts = jnp.asarray([leaf.shape[0] for leaf in leaves], jnp.int32)
        gathered = _call("allgather", [counts], [jax.ShapeDtypeStruct((ranks * len(leaves),), jnp.int32)],
                         [base + ".rows"], check_rows=np.int32(0), process_set=np.int32(set_id))[0]
        rows = np.asarray(gathered).reshape(ranks, len(leaves)).sum(axis=0).tolist()
    results = [jax.ShapeDtypeStruct((r,) + tuple(leaf.shape[1:]), leaf.dtype) for r, leaf in zip(rows, leaves)]
    # Inside jit the handler checks that the ranks' rows agree (the shapes above assume so).
    outs = _call("allgather", leaves, results, names, check_rows=np.int32(_traced(leaves)),
                 process_set=np.int32(set_id))
    return jax.tree_util.tree_unflatten(treedef, [_from_bits(o, d) for o, d in zip(outs, carried)])


def reducescatter(tree, op=Average, name=None, prescale_factor=1.0, postscale_factor=1.0,
                  process_set=global_process_set):
    """Reduces every leaf across ranks (Average, the default, or Sum) and gives each rank its block of
    the result's rows: rank r gets kolo_reducescatter_rows(rows, r, size) rows, the first rows % size
    ranks one more. Every rank gives the same shape. Differentiable: the gradient is the allgather
    of the result's gradients, scaled as the forward was."""
    _, leaves, names, _, treedef = _flatten(tree, name, "reducescatter", process_set)
    if not leaves:
        return tree
    if op not in (Sum, Average):
        raise KoloValueError("tensor '%s' on rank %d: reducescatter reduces with Average or Sum, not op %r"
                             % (names[0], _rank(), op), INVALID_ARGUMENT)
    for leaf, leaf_name in zip(leaves, names):
        if leaf.ndim == 0:
            raise KoloValueError("tensor '%s' on rank %d: reducescatter needs at least one dimension (the rows it "
                                 "scatters); reshape a scalar to (1,)" % (leaf_name, _rank()), INVALID_ARGUMENT)
    _check_scaling(leaves, names, prescale_factor, postscale_factor)
    set_id = _process_sets.set_id(process_set, "reducescatter of tensor '%s'" % names[0])
    outs = _scatter(tuple(leaves), tuple(names), int(op), float(prescale_factor), float(postscale_factor), set_id)
    return jax.tree_util.tree_unflatten(treedef, list(outs))


@functools.partial(jax.custom_vjp, nondiff_argnums=(1, 2, 3, 4, 5))
def _scatter(leaves, names, op, prescale, postscale, set_id):
    members, rank = _members(set_id)
    ranks = len(members)
    results = [jax.ShapeDtypeStruct((_C.reducescatter_rows(leaf.shape[0], rank, ranks),) + tuple(leaf.shape[1:]),
                                    leaf.dtype) for leaf in leaves]
    return tuple(_call("reducescatter", list(leaves), results, list(names), op=np.int32(op),
                       prescale=np.float64(prescale), postscale=np.float64(postscale),
                       process_set=np.int32(set_id)))


def _scatter_forward(leaves, names, op, prescale, postscale, set_id):
    # The inputs' row counts, for the gradients' shapes, carried as empty arrays of that many rows.
    rows = tuple(jnp.empty((leaf.shape[0], 0), jnp.int8) for leaf in leaves)
    return _scatter(leaves, names, op, prescale, postscale, set_id), rows


def _scatter_backward(names, op, prescale, postscale, set_id, rows, cotangents):
    # Each input row reached every rank's loss through the one rank holding its block: the gradient
    # of an input is that block's gradient, gathered, times the forward's scaling (and 1/size for
    # Average).
    scale = prescale * postscale / (len(_members(set_id)[0]) if op == Average else 1)
    floating = [i for i, ct in enumerate(cotangents) if ct.dtype != jax.dtypes.float0]
    grads = list(cotangents)
    if floating:
        gathered = _call("allgather", [cotangents[i] for i in floating],
                         [jax.ShapeDtypeStruct((rows[i].shape[0],) + cotangents[i].shape[1:],
                                               cotangents[i].dtype) for i in floating],
                         [names[i] + ".grad" for i in floating], check_rows=np.int32(0),
                         process_set=np.int32(set_id))
        for i, g in zip(floating, gathered):
            grads[i] = g * jnp.asarray(scale, g.dtype) if scale != 1.0 else g
    return (tuple(grads),)


_scatter.defvjp(_scatter_forward, _scatter_backward)


def broadcast(tree, root_rank=0, name=None, process_set=global_process_set):
    """Every leaf of `tree` as it is on `root_rank` (a job rank), on every rank (of the process set).
    Any dtype that is not complex travels (as bits of the same width where kolo lacks it)."""
    _, leaves, names, carried, treedef = _flatten(tree, name, "broadcast", process_set, moves_bytes=True)
    if not leaves:
        return tree
    if not 0 <= int(root_rank) < _lifecycle.size():
        raise KoloValueError("tensor '%s' on rank %d: root_rank %d is not a rank of this job (size %d)"
                             % (names[0], _rank(), root_rank, _lifecycle.size()), INVALID_ARGUMENT)
    set_id = _process_sets.set_id(process_set, "broadcast of tensor '%s'" % names[0])
    results = [jax.ShapeDtypeStruct(leaf.shape, leaf.dtype) for leaf in leaves]
    outs = _call("broadcast", leaves, results, names, in_place=True, root_rank=np.int32(root_rank),
                 process_set=np.int32(set_id))
    return jax.tree_util.tree_unflatten(treedef, [_from_bits(o, d) for o, d in zip(outs, carried)])


def broadcast_variables(variables, root_rank=0, process_set=global_process_set):
    """The initial weights (or any pytree of arrays) as `root_rank` has them, on every rank:
    ``params = kolo.broadcast_variables(params, root_rank=0)``."""
    return broadcast(variables, root_rank, name="broadcast_variables", process_set=process_set)


def barrier(process_set=global_process_set):
    """Returns once every rank (of the process set) has called it."""
    handle = _C.barrier_async(_process_sets.set_id(process_set, "barrier"))
    code, message, _ = _C.wait(handle)
    if code != OK:
        raise error_for(code, message)


__all__ = ["Sum", "Average", "Min", "Max", "Product", "Adasum", "KoloError", "KoloValueError", "allreduce", "allgather",
           "broadcast", "reducescatter", "broadcast_variables", "barrier"]
