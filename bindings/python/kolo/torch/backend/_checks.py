"""What the backend's collectives refuse at once: the message names the op and this rank."""
from kolo._abi import INVALID_ARGUMENT, _C
from kolo._errors import KoloValueError


def refuse(collective, text, *args):
    raise KoloValueError(("%s on rank %d: " + text) % ((collective, _C.rank()) + args), INVALID_ARGUMENT)


def flat(tensor, collective, role):
    """`tensor` as one dimension, without a copy: kolo reads and writes it in place."""
    if not tensor.is_contiguous():
        refuse(collective, "the %s tensor is not contiguous", role)
    return tensor.view(-1)
