"""torch.distributed's ReduceOp as kolo's reduce op: the ones kolo has, and a clear refusal of the others."""
import torch.distributed as dist

from kolo._abi import INVALID_ARGUMENT, _C
from kolo._errors import KoloValueError
from kolo.torch._reduce_ops import Average, Max, Min, Product, Sum

def _key(op):
    """A ReduceOp's (or a RedOpType's) value: a ReduceOp hashes as 0 whatever it is, and a RedOpType hashes through
    Python, twice the time of a lookup by its value (on every op's path). (Before torch 2, ReduceOp.SUM is a
    ReduceOp.)"""
    return getattr(getattr(op, "op", op), "value", None)


_KOLO_OF = {
    _key(dist.ReduceOp.SUM): Sum,
    _key(dist.ReduceOp.AVG): Average,
    _key(dist.ReduceOp.PRODUCT): Product,
    _key(dist.ReduceOp.MIN): Min,
    _key(dist.ReduceOp.MAX): Max,
}


def kolo_op(op, collective):
    """kolo's op for `op` (a ReduceOp, or its RedOpType); refused at once, naming it, where kolo has none."""
    ours = _KOLO_OF.get(_key(op))
    if ours is not None:
        return ours
    raise KoloValueError("%s on rank %d: kolo reduces with SUM, AVG, PRODUCT, MIN and MAX, not %s"
                         % (collective, _C.rank(), op_text(op)), INVALID_ARGUMENT)


def op_text(op):
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM", "UNUSED"):
        if hasattr(dist.ReduceOp, name) and op == getattr(dist.ReduceOp, name):
            return "ReduceOp." + name
    return repr(op)
