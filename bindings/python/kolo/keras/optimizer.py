"""DistributedOptimizer for Keras 3: gradients are averaged across ranks inside the train step,
before the optimizer applies them."""
from kolo._core import AVERAGE, SUM
from kolo.keras import _backend
from kolo.keras.compression import Compression


class _Distributed:
    """Mixed in before the user's optimizer class. Keras' train step (and a custom loop's
    optimizer.stateless_apply) calls apply(); the gradients cross ranks there, as one pytree, so
    kolo fuses them into few collectives inside the compiled step."""

    def apply(self, grads, trainable_variables=None):
        grads = list(grads)
        variables = trainable_variables if trainable_variables is not None else getattr(self, "_trainable_variables", None)
        names = _gradient_names(grads, variables)
        present = [i for i, g in enumerate(grads) if g is not None]
        if present:
            compressed, contexts = {}, {}
            for i in present:
                compressed[names[i]], contexts[names[i]] = self._kolo_compression.compress(grads[i])
            pre, post = 1.0, 1.0
            if self._kolo_op == AVERAGE and self._kolo_predivide != 1.0:
                # Divide by the factor before summing and by size / factor after: smaller sums in 16 bits.
                pre, post = 1.0 / self._kolo_predivide, self._kolo_predivide
            reduced = _backend.allreduce(compressed, self._kolo_name, self._kolo_op, pre, post)
            for i in present:
                grads[i] = self._kolo_compression.decompress(reduced[names[i]], contexts[names[i]])
        return super().apply(grads, trainable_variables)


def _gradient_names(grads, variables):
    """A name per gradient: its variable's path where the paths are known and distinct."""
    paths = [getattr(v, "path", None) for v in variables] if variables is not None else []
    if len(paths) == len(grads) and all(paths) and len(set(paths)) == len(paths):
        return paths
    return ["%d" % i for i in range(len(grads))]


def DistributedOptimizer(optimizer, name=None, compression=Compression.none, op=AVERAGE,
                         gradient_predivide_factor=1.0):
    """Wraps a Keras optimizer so that every rank applies the same gradients: those averaged (op
    Average, the default, or summed with op Sum) across ranks. The result is still an instance of
    the optimizer's class, made anew from its config (so wrap it before training).

    compression: Compression.none, .fp16 or .bf16 for the trip across ranks.
    gradient_predivide_factor: with Average, divide by it before summing and by size / it after.
    """
    _backend.require_supported_backend("DistributedOptimizer")
    if op not in (AVERAGE, SUM):
        raise ValueError("DistributedOptimizer reduces gradients with Average or Sum, not op %r" % (op,))
    if gradient_predivide_factor != 1.0 and op != AVERAGE:
        raise ValueError("gradient_predivide_factor applies to op=Average only")
    base = optimizer.__class__
    cls = type(base.__name__, (_Distributed, base), {"__module__": base.__module__})
    distributed = cls.from_config(optimizer.get_config())
    distributed._kolo_name = name or "DistributedOptimizer.grads"
    distributed._kolo_compression = compression
    distributed._kolo_op = op
    distributed._kolo_predivide = float(gradient_predivide_factor)
    return distributed
