"""kolo's reduce ops, with Horovod's names."""
from kolo import _core

Sum = _core.SUM
Average = _core.AVERAGE
Min = _core.MIN
Max = _core.MAX
Product = _core.PRODUCT
Adasum = _core.ADASUM  # adaptive summation (floating-point tensors); see DistributedOptimizer for its use
_OP_NAMES = {Sum: "Sum", Average: "Average", Min: "Min", Max: "Max", Product: "Product", Adasum: "Adasum"}

_op_of = _core.op_of
