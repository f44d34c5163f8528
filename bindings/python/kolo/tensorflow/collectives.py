"""Horovod's horovod.tensorflow collectives over kolo's ops: allreduce (dense and IndexedSlices),
grouped_allreduce, reducescatter, grouped_reducescatter, with Horovod's signatures (device_dense and
device_sparse are accepted: kolo places work by each tensor's device)."""
import tensorflow as tf

from kolo import _process_sets
from kolo._process_sets import global_process_set
from kolo.tensorflow import mpi_ops
from kolo.tensorflow.compression import Compression
from kolo.tensorflow.mpi_ops import Average, Sum, _op_of


def allreduce(tensor, average=None, device_dense="", device_sparse="", compression=Compression.none, op=None,
              prescale_factor=1.0, postscale_factor=1.0, name=None, process_set=global_process_set,
              ignore_name_scope=False):
    """`tensor` reduced over the ranks (Average by default). A tf.IndexedSlices (an embedding's
    gradient) is reduced as Horovod does: every rank's values and indices gathered (divided by the
    set's size for Average), so it stays sparse. compression applies to dense tensors."""
    op = _op_of(op, average)
    if isinstance(tensor, tf.IndexedSlices):
        _check_sparse(op, prescale_factor, postscale_factor)
        base = mpi_ops._name(name, "allreduce", process_set)
        values = mpi_ops.allgather(tensor.values, name=base + ".values", process_set=process_set)
        indices = mpi_ops.allgather(tensor.indices, name=base + ".indices", process_set=process_set)
        if op == Average:
            values = values / tf.cast(_process_sets.set_size(process_set), values.dtype)
        return tf.IndexedSlices(values, indices, dense_shape=tensor.dense_shape)
    compressed, ctx = compression.compress(tf.convert_to_tensor(tensor))
    reduced = mpi_ops._allreduce(compressed, name, op, prescale_factor, postscale_factor, process_set)
    return compression.decompress(reduced, ctx)


def _check_sparse(op, prescale_factor, postscale_factor):
    # Horovod's exception type, NotImplementedError, raised on every rank before anything is enqueued.
    if op not in (Sum, Average):
        raise NotImplementedError("allreduce of IndexedSlices supports Sum and Average, not %s"
                                  % mpi_ops._OP_NAMES.get(op, op))
    if prescale_factor != 1.0 or postscale_factor != 1.0:
        raise NotImplementedError("allreduce of IndexedSlices does not support prescale_factor or "
                                  "postscale_factor (scale the values before or after)")


def grouped_allreduce(tensors, average=None, device_dense="", device_sparse="", compression=Compression.none,
                      op=None, prescale_factor=1.0, postscale_factor=1.0, process_set=global_process_set,
                      ignore_name_scope=False, name=None):
    """Allreduces of several tensors in one op (Horovod's): the dense ones reach kolo together and
    complete together; tf.IndexedSlices go as allreduce does them. Tensor i is named "<name>.<i>"."""
    op = _op_of(op, average)
    if any(isinstance(t, tf.IndexedSlices) for t in tensors):
        _check_sparse(op, prescale_factor, postscale_factor)  # before any is enqueued
    base = mpi_ops._name(name, "allreduce", process_set)
    dense = [i for i, t in enumerate(tensors) if not isinstance(t, tf.IndexedSlices)]
    packed = [compression.compress(tf.convert_to_tensor(tensors[i])) for i in dense]
    reduced = mpi_ops._grouped_allreduce([c for c, _ in packed], base, op, prescale_factor, postscale_factor,
                                         process_set)
    out = list(tensors)
    for i, r, (_, ctx) in zip(dense, reduced, packed):
        out[i] = compression.decompress(r, ctx)
    for i, t in enumerate(tensors):
        if isinstance(t, tf.IndexedSlices):
            out[i] = allreduce(t, op=op, name="%s.%d" % (base, i), process_set=process_set)
    return out


def reducescatter(tensor, device_dense="", compression=Compression.none, op=Average, name=None,
                  process_set=global_process_set, ignore_name_scope=False, prescale_factor=1.0,
                  postscale_factor=1.0):
    """This rank's block of rows of the reduction (Average or Sum) of every rank's `tensor`: rows
    divided as evenly as possible among the set's ranks, the lower ones taking the extra rows."""
    compressed, ctx = compression.compress(tf.convert_to_tensor(tensor))
    block = mpi_ops._reducescatter(compressed, name, op, prescale_factor, postscale_factor, process_set)
    return compression.decompress(block, ctx)


def grouped_reducescatter(tensors, device_dense="", compression=Compression.none, op=Average,
                          process_set=global_process_set, prescale_factor=1.0, postscale_factor=1.0, name=None):
    names = mpi_ops._group_names(name, len(tensors), "reducescatter", process_set)
    return [reducescatter(t, compression=compression, op=op, name=n, process_set=process_set,
                          prescale_factor=prescale_factor, postscale_factor=postscale_factor)
            for t, n in zip(tensors, names)]
