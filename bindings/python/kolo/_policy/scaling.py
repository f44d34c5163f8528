"""Reduce ops and scaling, as every binding applies them: Horovod's op names, its `average` spelling,
and the gradient predivide factor's split into the factors kolo multiplies before and after the sum."""
from kolo._abi import ADASUM, AVERAGE, MAX, MIN, PRODUCT, SUM
from kolo._errors import KoloError

Sum, Average, Min, Max, Product, Adasum = SUM, AVERAGE, MIN, MAX, PRODUCT, ADASUM
OP_NAMES = {Sum: "Sum", Average: "Average", Min: "Min", Max: "Max", Product: "Product", Adasum: "Adasum"}

PREDIVIDE_NEEDS_AVERAGE = "gradient_predivide_factor applies to op=Average only"


def op_of(op, average, default=Average):
    """Horovod's rule for the reduce op: `average` is its older spelling of op (True: Average, False:
    Sum); giving both is an error."""
    if average is not None:
        if op is not None:
            raise ValueError("pass op or average, not both (average is Horovod's older spelling)")
        return Average if average else Sum
    return default if op is None else op


def check_predivide(op, gradient_predivide_factor):
    """Refuses a predivide factor with any op but Average (it splits the averaging)."""
    if gradient_predivide_factor != 1.0 and op != Average:
        raise ValueError(PREDIVIDE_NEEDS_AVERAGE)


def predivide(op, gradient_predivide_factor):
    """(prescale, postscale) for a gradient reduction: with Average, divide by the factor before the
    sum and by size / factor after (kolo's Average divides by size), so that large sums in 16 bits stay
    in range; else no scaling."""
    factor = float(gradient_predivide_factor)
    if op == Average and factor != 1.0:
        return 1.0 / factor, factor
    return 1.0, 1.0


def check_differentiable(op, collective="an allreduce"):
    """Only Sum and Average have a gradient (the same reduction of the gradients)."""
    if op not in (Sum, Average):
        raise KoloError("the gradient of %s with op %s is not defined; use Sum or Average"
                        % (collective, OP_NAMES.get(op, op)))
