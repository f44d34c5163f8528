"""DistributedOptimizer and PartialDistributedOptimizer for Keras 3 (Horovod's signatures): gradients
are reduced across ranks inside the train step, before the optimizer applies them."""
import keras

from kolo import _lifecycle, _process_sets
from kolo._abi import ADASUM, AVERAGE, SUM
from kolo._policy import scaling
from kolo.keras import _backend
from kolo.keras.compression import Compression


def _refuse_keras_2(optimizer):
    """A tf_keras optimizer (Keras 2, what tf.keras is with TF_USE_LEGACY_KERAS=1) would fail deep inside
    model.fit, with kolo's Keras 3 callbacks; say so here, where the script wraps it."""
    module = type(optimizer).__module__ or ""
    if module.split(".")[0] == "tf_keras" or module.startswith("keras.optimizers.legacy"):
        raise ValueError("kolo.keras works with Keras 3; this optimizer (%s.%s) is Keras 2's, which tf.keras is "
                         "where TF_USE_LEGACY_KERAS=1. Run with Keras 3 (unset TF_USE_LEGACY_KERAS), or keep "
                         "Keras 2 and reduce gradients with kolo.tensorflow's DistributedGradientTape in a custom "
                         "training loop" % (module, type(optimizer).__name__))


class _Distributed:
    """Mixed in before the user's optimizer class. Keras applies gradients through apply() (model.fit's
    train step, a custom loop's apply_gradients or stateless_apply); the gradients cross ranks where
    Keras hands the final gradients of an update to clipping, as one pytree, so kolo fuses them into
    few collectives inside the compiled step. With backward_passes_per_step = N (Keras' gradient
    accumulation underneath) that point is reached with the N passes' gradients, once per update:
    only update steps communicate."""

    def register_local_var(self, var):
        """Keeps `var`'s gradient on this rank: it is applied as computed here, never reduced."""
        self._kolo.local.add(id(var))

    def _backend_apply_gradients(self, grads, trainable_variables):
        # The variables of the gradients _clip_gradients will get (Keras has filtered both lists).
        self._kolo.variables = list(trainable_variables)
        try:
            return super()._backend_apply_gradients(grads, trainable_variables)
        finally:
            self._kolo.variables = None

    def _clip_gradients(self, grads):
        grads = list(grads)
        variables = self._kolo.variables
        if variables is None or len(variables) != len(grads):
            raise RuntimeError("kolo.keras.DistributedOptimizer on rank %d: Keras handed %d gradients to clip for %s "
                               "variables; this version of Keras applies gradients in a way kolo does not know"
                               % (_lifecycle.rank(), len(grads), "unknown" if variables is None else len(variables)))
        if self.gradient_accumulation_steps and keras.backend.backend() == "jax":
            # Keras' JAX optimizer clips on every step and keeps the update only on update steps;
            # reduce only there, so that the other steps do not communicate.
            import jax
            is_update = (self._iterations + 1) % self.gradient_accumulation_steps == 0
            grads = jax.lax.cond(is_update, lambda gs: self._kolo_reduce(gs, variables), lambda gs: list(gs), grads)
        else:
            grads = self._kolo_reduce(grads, variables)
        return super()._clip_gradients(grads)

    def _kolo_reduce(self, grads, variables):
        grads = list(grads)
        names = _gradient_names(grads, variables)
        # Layers' weights are looked up now: a layer may have been built after it was registered.
        kolo = self._kolo
        local_ids = kolo.local | {id(w) for layer in kolo.local_layers for w in layer.trainable_weights}
        local = [id(v) in local_ids for v in variables]
        shared = [i for i, g in enumerate(grads) if g is not None and not local[i]]
        if not kolo.included:
            return grads  # outside the process set: this rank's own gradients, as in Horovod
        if shared:
            compressed, contexts = {}, {}
            for i in shared:
                compressed[names[i]], contexts[names[i]] = kolo.compression.compress(grads[i])
            pre, post = scaling.predivide(kolo.op, kolo.predivide)
            if self.gradient_accumulation_steps and not kolo.average_aggregated:
                # Keras averages the N passes' gradients; Horovod's default sums them.
                post *= self.gradient_accumulation_steps
            reduced = _backend.allreduce(compressed, kolo.name, kolo.op, pre, post, kolo.process_set)
            for i in shared:
                grads[i] = kolo.compression.decompress(reduced[names[i]], contexts[names[i]])
        if kolo.scale_local:
            # Local gradients are not averaged: divided by size, they keep the scale the learning rate
            # (usually multiplied by size) expects, as in Horovod.
            for i, g in enumerate(grads):
                if g is not None and local[i]:
                    grads[i] = g / _process_sets.set_size(kolo.process_set)
        return grads


class _Settings:
    """kolo's part of a distributed optimizer, in one plain object: Keras tracks the lists, sets and
    tuples set on an optimizer (and would count these variables as the optimizer's own)."""

    def __init__(self, name, compression, op, predivide, scale_local, average_aggregated, process_set=None):
        self.name, self.compression, self.op, self.predivide = name, compression, op, predivide
        self.process_set = process_set
        self.included = process_set is None or bool(process_set.included())
        self.scale_local, self.average_aggregated = scale_local, average_aggregated
        self.local = set()        # ids of registered local variables
        self.local_layers = []    # layers whose trainable weights are local
        self.variables = None     # the variables of the gradients being applied, during apply


def _gradient_names(grads, variables):
    """A name per gradient: its variable's path where the paths are known and distinct."""
    paths = [getattr(v, "path", None) for v in variables] if variables is not None else []
    if len(paths) == len(grads) and all(paths) and len(set(paths)) == len(paths):
        return paths
    return ["%d" % i for i in range(len(grads))]


def _distributed_class(base):
    """The optimizer's class with kolo mixed in, under the same name (a saved model loads without kolo)."""
    if issubclass(base, _Distributed):
        return base
    return type(base.__name__, (_Distributed, base), {"__module__": base.__module__})


def _make_distributed(optimizer, name, compression, op, gradient_predivide_factor, scale_local_gradients,
                      average_aggregated_gradients=False, process_set=None):
    """Turns `optimizer` itself into a distributed one, keeping its state (load_model's case)."""
    _backend.require_supported_backend("DistributedOptimizer")
    if op not in (AVERAGE, SUM, ADASUM):
        raise ValueError("DistributedOptimizer reduces gradients with Average, Sum or Adasum, not op %r" % (op,))
    scaling.check_predivide(op, gradient_predivide_factor)
    optimizer.__class__ = _distributed_class(optimizer.__class__)
    optimizer._kolo = _Settings(name or "DistributedOptimizer.grads", compression, op, float(gradient_predivide_factor),
                                bool(scale_local_gradients), bool(average_aggregated_gradients), process_set)
    return optimizer


def DistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="", compression=Compression.none,
                         sparse_as_dense=False, gradient_predivide_factor=1.0, op=AVERAGE, backward_passes_per_step=1,
                         average_aggregated_gradients=False, num_groups=0, groups=None,
                         process_set=_process_sets.global_process_set,
                         scale_local_gradients=True):
    """Wraps a Keras optimizer so that every rank applies the same gradients: those averaged (op
    Average, the default, or summed with op Sum, or combined with op Adasum, as Horovod's Keras
    optimizer does) across ranks. The result is still an instance of the
    optimizer's class, made anew from its config (so wrap it before training; load_model wraps a
    saved one with its state).

    compression: Compression.none, .fp16 or .bf16 for the trip across ranks.
    gradient_predivide_factor: with Average, divide by it before summing and by size / it after.
    backward_passes_per_step: N > 1 accumulates N batches' gradients on each rank (Keras'
        gradient_accumulation_steps) and reduces them once per update; average_aggregated_gradients
        divides the accumulated sum by N (Horovod's default sums them).
    device_dense, device_sparse, sparse_as_dense, num_groups, groups: accepted for Horovod's
        scripts; kolo places work by each tensor's device, reduces every gradient dense (Keras 3's
        are) and fuses a step's gradients in one request by itself.
    process_set: the gradients are reduced over its ranks (every rank by default); a rank outside
        it applies its own gradients, as in Horovod.
    """
    _refuse_keras_2(optimizer)
    _process_sets.set_id(process_set, "DistributedOptimizer")  # registered, or a clear error now
    if int(backward_passes_per_step) < 1:
        raise ValueError("backward_passes_per_step must be at least 1, not %r" % (backward_passes_per_step,))
    config = optimizer.get_config()
    if backward_passes_per_step > 1:
        if config.get("gradient_accumulation_steps"):
            raise ValueError("DistributedOptimizer: give backward_passes_per_step or the optimizer's "
                             "gradient_accumulation_steps, not both")
        config["gradient_accumulation_steps"] = int(backward_passes_per_step)
    distributed = _distributed_class(optimizer.__class__).from_config(config)
    return _make_distributed(distributed, name, compression, op, gradient_predivide_factor, scale_local_gradients,
                             average_aggregated_gradients, process_set)


def PartialDistributedOptimizer(optimizer, name=None, device_dense="", device_sparse="", compression=Compression.none,
                                sparse_as_dense=False, gradient_predivide_factor=1.0, op=AVERAGE,
                                backward_passes_per_step=1, average_aggregated_gradients=False, groups=None,
                                process_set=_process_sets.global_process_set, local_layers=None,
                                scale_local_gradients=True):
    """DistributedOptimizer that keeps the gradients of `local_layers` (a Keras layer or a list of them)
    on each rank: those layers train on this rank's data alone, divided by size when
    scale_local_gradients (Horovod's default); every other gradient is reduced."""
    if local_layers is None:
        local_layers = []
    elif isinstance(local_layers, keras.layers.Layer):
        local_layers = [local_layers]
    else:
        local_layers = list(local_layers)
        if not all(isinstance(layer, keras.layers.Layer) for layer in local_layers):
            raise ValueError("PartialDistributedOptimizer: every one of local_layers must be a keras.layers.Layer")
    distributed = DistributedOptimizer(optimizer, name, device_dense, device_sparse, compression, sparse_as_dense,
                                       gradient_predivide_factor, op, backward_passes_per_step,
                                       average_aggregated_gradients, 0, groups, process_set, scale_local_gradients)
    distributed._kolo.local_layers.extend(local_layers)
    return distributed
