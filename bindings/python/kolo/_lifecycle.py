"""kolo's lifecycle: version, init and shutdown (and the exit hook), recovery in place, and this rank's place
in the job."""
import atexit
import os
import sys
import threading

from kolo._abi import INVALID_ARGUMENT, OK, _C
from kolo._errors import KoloValueError, error_for


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
_world = 0             # which world this process is in: one more at each recover_in_place()
_after_recovery = []   # what a binding re-makes once the world has changed in place (torch's default group)


def _at_exit():
    _C.shutdown()
    if _left_in_place is not None:
        # kolorun --in-place waits for this line from every survivor (launcher/in_place_reports.h): mpirun
        # itself would wait for the lost process, which never ends if it is frozen or cut off. Python
        # keeps the exception that ended the script in sys.last_value; a sys.exit(code) it does not tell.
        status = _exit_status if _exit_status is not None else 1 if getattr(sys, "last_value", None) is not None else 0
        line = "kolo: rank %d of %d, left in place after a peer was lost, exits with status %d\n" % (
            _left_in_place + (status,))
        # One write of the whole line: print's text and newline are two, and another rank's line written to the
        # same pipe between them ran into this one.
        sys.stderr.flush()
        os.write(2, line.encode())


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
    global _left_in_place, _world
    code, message = _C.recover_in_place()
    if code != OK:
        raise error_for(code, message)
    _world += 1
    _left_in_place = (_C.rank(), _C.size())
    for remake in list(_after_recovery):
        remake()


def world_number():
    """Which world this process is in: one more at each recover_in_place() (init() after shutdown() starts the same
    ranks again). What was made for a world (a torch group) checks it to refuse an op in a later one, whose ranks
    differ."""
    return _world


def after_recovery(remake):
    """Calls `remake()` (once) on every survivor after each recover_in_place(), in the new world: a binding's
    seam for what the world's ranks shape, which it must make anew (kolo.torch's backend: torch's default group)."""
    if remake not in _after_recovery:
        _after_recovery.append(remake)


def _place(what, doc):
    """This rank's place in the job, as _C.<what>() gives it: -1 (before init) raises."""
    def place():
        value = getattr(_C, what)()
        if value < 0:
            raise ValueError("kolo is not initialized: call init() before %s()" % what)
        return value
    place.__name__ = place.__qualname__ = what
    place.__doc__ = doc
    return place


rank = _place("rank", "This process's rank in the job.")
size = _place("size", "How many ranks the job has.")
local_rank = _place("local_rank", "This process's rank among the ranks of its host.")
local_size = _place("local_size", "How many ranks run on this host.")
cross_rank = _place("cross_rank", "Which host this is, among the hosts (those with this local rank).")
cross_size = _place("cross_size", "How many hosts run a rank with this local rank.")


def mpi_threads_supported():
    return _C.mpi_threads_supported()


def is_homogeneous():
    """True when every host runs as many ranks."""
    return _C.is_homogeneous()
