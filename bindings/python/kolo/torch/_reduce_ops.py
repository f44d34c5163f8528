"""kolo's reduce ops, with Horovod's names (kolo._policy.scaling's, under the names kolo.torch's modules use)."""
from kolo._policy.scaling import OP_NAMES as _OP_NAMES, Adasum, Average, Max, Min, Product, Sum  # noqa: F401
from kolo._policy.scaling import op_of as _op_of  # noqa: F401
