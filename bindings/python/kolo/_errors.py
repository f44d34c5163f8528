"""kolo's exceptions, and the one each status code of the C ABI raises."""
from kolo._abi import INTERNAL, INVALID_ARGUMENT, PEERS_FAILED


class KoloError(RuntimeError):
    """An operation failed: ranks disagreed about it, the job was shut down, MPI failed, ...

    The message names the tensor and the ranks involved; ``code`` is kolo's status code.
    """

    def __init__(self, message, code=INTERNAL):
        super().__init__(message)
        self.code = code


class KoloValueError(KoloError, ValueError):
    """A call that is wrong in itself (bad dtype, wrong shape, ...): nothing was enqueued."""


class PeersFailedError(KoloError):
    """A peer was lost and the job goes on without it (ULFM, in place): roll back to the last commit
    and call recover_in_place() (kolo.elastic.run does both)."""


# Horovod's name for an internal failure of a collective.
HorovodInternalError = KoloError


def error_for(code, message):
    cls = {INVALID_ARGUMENT: KoloValueError, PEERS_FAILED: PeersFailedError}.get(code, KoloError)
    return cls(message, code)
