"""torch.distributed's ReduceOp as kolo's reduce op: the ones kolo has, and a clear refusal of the others."""
import torch.distributed as dist

from kolo._abi import INVALID_ARGUMENT, _C
from kolo._errors import KoloValueError
from kolo.torch._reduce_ops import Average, Max, Min, Product, Sum

_KOLO_OF = {
    dist.ReduceOp.SUM: Sum,
    dist.ReduceOp.AVG: Average,
    dist.ReduceOp.PRODUCT: Product,
    dist.ReduceOp.MIN: Min,
    dist.ReduceOp.MAX: Max,
}


def kolo_op(op, collective):
    """kolo's op for `op` (a ReduceOp, or its RedOpType); refused at once, naming it, where kolo has none."""
    # By the RedOpType, which hashes as its value (a ReduceOp hashes as 0 whatever it is): one lookup per op.
    ours = _KOLO_OF.get(getattr(op, "op", op))
    if ours is not None:
        return ours
    raise KoloValueError("%s on rank %d: kolo reduces with SUM, AVG, PRODUCT, MIN and MAX, not %s"
                         % (collective, _C.rank(), op_text(op)), INVALID_ARGUMENT)


def op_text(op):
    for name in ("SUM", "AVG", "PRODUCT", "MIN", "MAX", "BAND", "BOR", "BXOR", "PREMUL_SUM", "UNUSED"):
        if hasattr(dist.ReduceOp, name) and op == getattr(dist.ReduceOp, name):
            return "ReduceOp." + name
    return repr(op)
