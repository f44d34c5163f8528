"""What every framework binding shares: the extension module, errors, lifecycle, and handles.

Frameworks describe their tensors as plain tuples (pointer, dtype code, shape, strides, device type,
device index, stream) and get results back as byte buffers they wrap without copying.
"""
import atexit
import sys
import threading

try:
    from kolo import _C
except ImportError as e:  # pragma: no cover - a broken install, reported clearly
    raise ImportError(
        "kolo's extension module kolo._C could not be loaded (%s). Install kolo (pip install . in its source "
        "tree), or build it (.ci/setup) and put build/python on PYTHONPATH." % e) from e

# Status codes, as in include/kolo/c_api.h.
OK, INVALID_ARGUMENT, NOT_INITIALIZED, MISMATCH, ABORTED, INTERNAL, UNSUPPORTED, TIMEOUT, PEERS_FAILED = range(9)

# Reduce ops, as in include/kolo/c_api.h.
SUM, AVERAGE, MIN, MAX, PRODUCT, ADASUM = range(6)

# Dtype codes, as in include/kolo/c_api.h.
UINT8, INT8, INT32, INT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64, INT16, BOOL, UINT16 = range(11)
CPU, CUDA = 0, 1

def split_list(items, count):
    """Horovod's split of `items` into `count` consecutive groups of near-equal size (the first
    len % count one longer), as its optimizers' num_groups does; fewer groups when fewer items."""
    count = min(count, len(items))
    if count <= 0:
        return []
    size, extra = divmod(len(items), count)
    return [items[k * size + min(k, extra):(k + 1) * size + min(k + 1, extra)] for k in range(count)]


def op_of(op, average, default=AVERAGE):
    """Horovod's rule for the reduce op: `average` is its older spelling of op (True: Average, False:
    Sum); giving both is an error."""
    if average is not None:
        if op is not None:
            raise ValueError("pass op or average, not both (average is Horovod's older spelling)")
        return AVERAGE if average else SUM
    return default if op is None else op


# Compressions, as in include/kolo/c_api.h.
COMPRESSION_NONE, COMPRESSION_FP16, COMPRESSION_BF16 = range(3)


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


def version():
    return _C.version()


def build_summary():
    """Which of MPI, CUDA and NCCL this kolo was built with."""
    return _C.build_summary()


def nccl_runtime():
    """The NCCL this process's GPU ops use (loaded now if not yet): version, file, and how it was found
    ("already loaded" where the framework brought it); "" in a kolo built without NCCL."""
    return _C.nccl_runtime()


_lock = threading.Lock()
_exit_hook = False
_left_in_place = None  # (rank, size) after the last recover_in_place
_exit_status = None    # what this process exits with, where kolo knows it (a planned restart's)


def _at_exit():
    _C.shutdown()
    if _left_in_place is not None:
        # kolorun --in-place waits for this line from every survivor (launcher/in_place_reports.h): mpirun
        # itself would wait for the lost process, which never ends if it is frozen or cut off. Python
        # keeps the exception that ended the script in sys.last_value; a sys.exit(code) it does not tell.
        status = _exit_status if _exit_status is not None else 1 if getattr(sys, "last_value", None) is not None else 0
        print("kolo: rank %d of %d, left in place after a peer was lost, exits with status %d"
              % (_left_in_place + (status,)), file=sys.stderr, flush=True)


def init(comm=None, process_sets=None, **settings):
    """Starts kolo. Keyword arguments are KOLO_* settings, e.g. init(KOLO_CYCLE_TIME_MS="2").

    process_sets: ProcessSets (or lists of ranks) to register now, on every rank alike (see
    add_process_set); "dynamic" is accepted, as kolo always lets sets be added later. comm: Horovod's
    way of running on part of MPI_COMM_WORLD, which kolo does not offer: use a process set.
    """
    global _exit_hook
    if comm is not None:
        raise KoloValueError("init(comm=...): kolo runs on every rank of MPI_COMM_WORLD; to run collectives among "
                             "some ranks, register a process set (init(process_sets=[ProcessSet([...])]))",
                             INVALID_ARGUMENT)
    code, message = _C.init({str(k): str(v) for k, v in settings.items()})
    if code != OK:
        raise error_for(code, message)
    with _lock:
        if not _exit_hook:
            # Stop kolo's thread before the interpreter (and libraries such as mpi4py) wind down.
            atexit.register(_at_exit)
            _exit_hook = True
    from kolo import _process_sets
    _process_sets.register_at_init(process_sets)


def _exiting_with(status):
    """kolo.elastic, before sys.exit(status): Python does not tell an exit hook the status."""
    global _exit_status
    _exit_status = status


def shutdown():
    from kolo import _process_sets
    _C.shutdown()
    _process_sets.forget_all()


def is_initialized():
    return _C.is_initialized()


def in_place_recovery():
    """Whether this job survives a lost peer in place (Open MPI 5's ULFM, mpirun --with-ft ulfm)."""
    return _C.in_place_recovery()


def recover_in_place():
    """After a PeersFailedError, on every survivor: shrinks the job to the survivors and starts kolo
    again over them (no process restarted); size() and rank() then describe the new job. Process
    sets are gone, as after shutdown()."""
    from kolo import _process_sets
    _process_sets.forget_all()
    global _left_in_place
    code, message = _C.recover_in_place()
    if code != OK:
        raise error_for(code, message)
    _left_in_place = (_C.rank(), _C.size())


def _checked(value, what):
    if value < 0:
        raise ValueError("kolo is not initialized: call init() before %s()" % what)
    return value


def rank():
    return _checked(_C.rank(), "rank")


def size():
    return _checked(_C.size(), "size")


def local_rank():
    return _checked(_C.local_rank(), "local_rank")


def local_size():
    return _checked(_C.local_size(), "local_size")


def cross_rank():
    return _checked(_C.cross_rank(), "cross_rank")


def cross_size():
    return _checked(_C.cross_size(), "cross_size")


def mpi_threads_supported():
    return _C.mpi_threads_supported()


def is_homogeneous():
    """True when every host runs as many ranks."""
    return _C.is_homogeneous()


# What this kolo was built with, by Horovod's names. kolo always negotiates and moves CPU tensors
# over MPI; it has no Gloo, ROCm, DDL or oneCCL.
def mpi_built():
    return True


def mpi_enabled():
    return True


def gloo_built():
    return False


def gloo_enabled():
    return False


def nccl_built():
    """NCCL's version code (major * 10000 + minor * 100 + patch) when kolo was built with NCCL, else 0."""
    return _C.nccl_built()


def cuda_built():
    return _C.cuda_built()


def rocm_built():
    return False


def ddl_built():
    return False


def ccl_built():
    return False


def start_timeline(file_path, mark_cycles=False):
    """Writes a Chrome trace of every op to `file_path` from now on (a name with %r gives each rank its
    own file, else rank 0 writes); `mark_cycles` also marks negotiation cycles."""
    code, message = _C.start_timeline(str(file_path), bool(mark_cycles))
    if code != OK:
        raise error_for(code, message)


def stop_timeline():
    """Closes the timeline started by start_timeline (or KOLO_TIMELINE)."""
    code, message = _C.stop_timeline()
    if code != OK:
        raise error_for(code, message)


# The names every binding exports for these, Horovod's.
QUERIES = ("is_homogeneous", "mpi_built", "mpi_enabled", "gloo_built", "gloo_enabled", "nccl_built", "cuda_built",
           "rocm_built", "ddl_built", "ccl_built", "start_timeline", "stop_timeline")


class Pending:
    """Bookkeeping for one op in flight: what must stay alive, and how to turn kolo's output into
    the framework's result."""

    __slots__ = ("keep", "finish", "stream")

    def __init__(self, keep, finish, stream):
        self.keep = keep
        self.finish = finish
        # For GPU ops: gives the stream (an integer cudaStream_t) that will use the results, which
        # then waits for kolo's work on the device instead of the host waiting.
        self.stream = stream


class Handles:
    """Ops in flight, by handle: their tensors stay referenced (so their memory stays valid) until
    synchronize()."""

    def __init__(self):
        self._pending = {}
        self._early = {}  # handles that had already ended when enqueued
        self._lock = threading.Lock()

    def add(self, handle, keep, finish, stream=None):
        # A call rejected at once comes back as a handle that has already failed: raise now, as
        # the call itself was wrong.
        if _C.poll(handle) == 1:
            code, message, output = _C.wait(handle)
            if code != OK:
                raise error_for(code, message)
            with self._lock:
                self._early[handle] = (code, message, output)
        with self._lock:
            self._pending[handle] = Pending(keep, finish, stream)
        return handle

    def poll(self, handle):
        with self._lock:
            if handle in self._early:
                return True
            if handle not in self._pending:
                raise ValueError("unknown handle %r (never issued, or already synchronized)" % (handle,))
        return _C.poll(handle) == 1

    def synchronize(self, handle):
        with self._lock:
            pending = self._pending.pop(handle, None)
            early = self._early.pop(handle, None)
        if pending is None:
            raise ValueError("unknown handle %r (never issued, or already synchronized)" % (handle,))
        if early is not None:
            code, message, output = early
        elif pending.stream is not None:
            code, message, output = _C.wait_on_stream(handle, pending.stream())
        else:
            code, message, output = _C.wait(handle)
        if code != OK:
            raise error_for(code, message)
        return pending.finish(output)
