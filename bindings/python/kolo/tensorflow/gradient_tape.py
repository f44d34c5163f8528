"""DistributedGradientTape: Horovod's way to train with a custom TensorFlow loop. The tape's
gradient() returns the gradients reduced across ranks (averaged by default): every gradient's
allreduce is enqueued as soon as it is asked for, and kolo fuses them into few collectives."""
import collections

import tensorflow as tf

from kolo import _process_sets
from kolo._policy import grouping, scaling
from kolo._process_sets import global_process_set
from kolo.tensorflow import collectives
from kolo.tensorflow.compression import Compression
from kolo.tensorflow.mpi_ops import Average


def _grad_names(sources):
    """A name for each source's gradient, the same on every rank and at every step: the variable's path or name,
    with its place in `sources` where that is not unique (tf.Variable's default name is "Variable:0" for all)."""
    labels = [next((v for v in (getattr(s, a, None) for a in ("path", "name")) if isinstance(v, str) and v), None)
              for s in sources]
    counts = collections.Counter(labels)  # once, not per source: an eager step names every variable each time
    names = []
    for i, label in enumerate(labels):
        if label is None:
            names.append("grad.%d" % i)
        elif counts[label] == 1:
            names.append("grad.%s" % label)
        else:
            names.append("grad.%s.%d" % (label, i))
    return names


class _DistributedGradientTape:
    """Wraps a tf.GradientTape; anything but gradient() goes to the wrapped tape."""

    def __init__(self, tape, compression, sparse_as_dense, op, gradient_predivide_factor, process_set,
                 scale_local_gradients=True, groups=None):
        self._tape = tape
        self._groups = groups
        self._local = set()  # ids of sources whose gradients stay on this rank
        self._scale_local = scale_local_gradients
        self._compression = compression
        self._sparse_as_dense = sparse_as_dense
        self._op = op
        self._predivide = float(gradient_predivide_factor)
        self._process_set = process_set

    def register_local_source(self, source):
        """Keeps `source`'s gradient on this rank (divided by the size with scale_local_gradients)."""
        self._local.add(id(source))

    def __getattr__(self, attr):
        return getattr(self._tape, attr)

    def __enter__(self):
        self._tape.__enter__()
        return self

    def __exit__(self, *exc):
        return self._tape.__exit__(*exc)

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=tf.UnconnectedGradients.NONE):
        grads = self._tape.gradient(target, sources, output_gradients, unconnected_gradients)
        ps = self._process_set
        if not ps.included() or _process_sets.set_size(ps) == 1:
            return grads  # outside the set (or alone in it): this rank's own gradients, as in Horovod
        flat_sources = tf.nest.flatten(sources)
        flat = tf.nest.flatten(grads, expand_composites=False)
        names = _grad_names(flat_sources)
        pre, post = scaling.predivide(self._op, self._predivide)
        reduced, shared = [], []  # shared: (index, gradient, source) of what the ranks reduce
        for i, (g, source) in enumerate(zip(flat, flat_sources)):
            if g is None:
                reduced.append(None)
                continue
            if id(source) in self._local:
                # Not averaged: divided by the size, it keeps the scale a learning rate multiplied by the
                # size expects, as in Horovod.
                size = _process_sets.set_size(ps)
                reduced.append(g / tf.cast(size, g.dtype) if self._scale_local else g)
                continue
            if isinstance(g, tf.IndexedSlices) and self._sparse_as_dense:
                g = tf.convert_to_tensor(g)
            reduced.append(None)
            shared.append((i, g, source))
        # Horovod's groups: each gradient alone, consecutive groups, or a group per list of variables.
        for k, group in enumerate(grouping.split_by(shared, self._groups, key=lambda entry: id(entry[2]))):
            if len(group) == 1:
                i, g, source = group[0]
                reduced[i] = collectives.allreduce(g, compression=self._compression, op=self._op, prescale_factor=pre,
                                                   postscale_factor=post, name=names[i], process_set=ps)
                continue
            outs = collectives.grouped_allreduce([g for _, g, _ in group], compression=self._compression, op=self._op,
                                                 prescale_factor=pre, postscale_factor=post,
                                                 name="%s.group%d" % (names[group[0][0]], k),
                                                 process_set=ps)
            for (i, _, _), out in zip(group, outs):
                reduced[i] = out
        return tf.nest.pack_sequence_as(grads, reduced)


def DistributedGradientTape(gradtape, device_dense="", device_sparse="", compression=Compression.none,
                            sparse_as_dense=False, op=Average, gradient_predivide_factor=1.0, num_groups=0,
                            groups=None, process_set=global_process_set, scale_local_gradients=True):
    """A tape whose gradient() returns the gradients reduced over the ranks (op Average, Sum or
    Adasum), Horovod's signature. IndexedSlices (an embedding's gradients) travel as gathered values
    and indices, or dense with sparse_as_dense. compression: Compression.fp16 sends floating-point
    gradients in 16 bits. gradient_predivide_factor: divide before the sum, the rest after.
    groups (or num_groups, Horovod's older name): an int splits the gradients into that many
    consecutive groups, a list of lists of variables makes a group of each (the rest alone); a group is
    one grouped_allreduce op, reduced once all its gradients exist. Without groups, each gradient's
    allreduce starts as soon as it exists and kolo fuses whatever is ready. device_dense and
    device_sparse are accepted: kolo places work by the tensors' devices. A rank outside process_set
    keeps its own gradients."""
    _process_sets.set_id(process_set, "DistributedGradientTape")  # registered, or a clear error now
    scaling.check_predivide(op, gradient_predivide_factor)
    if groups is None and num_groups:
        groups = num_groups
    if not (groups is None or isinstance(groups, list) or (isinstance(groups, int) and groups >= 0)):
        raise ValueError("groups: a non-negative int or a list of lists of variables, not %r" % (groups,))
    return _DistributedGradientTape(gradtape, compression, sparse_as_dense, op, gradient_predivide_factor, process_set,
                                    scale_local_gradients, groups)


def PartialDistributedGradientTape(gradtape, device_dense="", device_sparse="", compression=Compression.none,
                                   sparse_as_dense=False, op=Average, gradient_predivide_factor=1.0, num_groups=0,
                                   groups=None, process_set=global_process_set, local_layers=None,
                                   scale_local_gradients=True):
    """DistributedGradientTape that keeps the gradients of `local_layers` (a Keras layer or a list of
    them) on each rank, divided by the size with scale_local_gradients (Horovod's)."""
    import keras
    if local_layers is None:
        local_layers = []
    elif isinstance(local_layers, keras.layers.Layer):
        local_layers = [local_layers]
    elif not all(isinstance(layer, keras.layers.Layer) for layer in local_layers):
        raise ValueError("PartialDistributedGradientTape: every one of local_layers must be a keras.layers.Layer")
    tape = DistributedGradientTape(gradtape, device_dense, device_sparse, compression, sparse_as_dense, op,
                                   gradient_predivide_factor, num_groups, groups, process_set, scale_local_gradients)
    for layer in local_layers:
        for variable in layer.trainable_weights:
            tape.register_local_source(variable)
    return tape
