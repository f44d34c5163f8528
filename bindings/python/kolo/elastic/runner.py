"""The elastic training loop (run_fn), and the restart path under an elastic kolorun.

kolorun (elastic mode) starts the workers with KOLO_ELASTIC=1, a job id and an attempt number. A
failure ends the attempt: the workers exit non-zero (mpirun ends the rest) and kolorun starts them
again on the hosts left. At the start of each attempt the ranks agree on the newest commit any host
kept (commit_store), its holder loads it and every rank syncs from it. New hosts: kolorun sends
SIGUSR1 (mpirun forwards it to every rank); at the next commit the ranks agree on it, and all exit
with RESTART_EXIT, which kolorun answers by starting them on the new hosts, from that commit."""
import atexit
import functools
import os
import signal
import sys
import time

import numpy as np

from kolo import _host, _lifecycle
from kolo._abi import ABORTED, MAX
from kolo._errors import KoloError, PeersFailedError

RESTART_EXIT = 75  # a planned restart (EX_TEMPFAIL): kolorun does not count it as a failure

_hosts_changed = False


class HostsUpdatedInterrupt(RuntimeError):
    """Hosts were added or removed: the job re-forms at the last commit, keeping the state.
    `skip_sync`: whether the state needs no sync afterwards (Horovod's)."""

    def __init__(self, skip_sync=False):
        super().__init__("hosts changed")
        self.skip_sync = skip_sync


def is_elastic_launch():
    return os.environ.get("KOLO_ELASTIC") == "1"


def _attempt():
    return int(os.environ.get("KOLO_ELASTIC_ATTEMPT", "0"))


def _store():
    from kolo.elastic.commit_store import CommitStore
    return CommitStore(os.environ.get("KOLO_ELASTIC_JOB_ID", "default"))


def _on_hosts_changed(signum, frame):
    global _hosts_changed
    _hosts_changed = True


# Installed as soon as kolo is imported under an elastic kolorun: kolorun may signal before training
# starts, and SIGUSR1's default action would end the process.
if is_elastic_launch():
    try:
        signal.signal(signal.SIGUSR1, _on_hosts_changed)
    except ValueError:  # imported off the main thread: run() installs it
        pass

    def _ignore_hosts_changed_at_exit():
        # Python puts its handlers back to the default as it finalizes; a signal for a host added just as
        # the job ends would then kill a rank that finished well (and kolorun would restart the job).
        # An ignored signal stays ignored.
        try:
            signal.signal(signal.SIGUSR1, signal.SIG_IGN)
        except ValueError:
            pass

    atexit.register(_ignore_hosts_changed_at_exit)


def hosts_changed_everywhere():
    # Every rank must leave at the same commit: one small allreduce (Max) of each rank's flag.
    if not is_elastic_launch():
        return False
    flag = np.array([1 if _hosts_changed else 0], np.int32)
    return bool(_host.allreduce([flag], ["kolo.elastic.hosts_changed"], MAX)[0][0])


def persist(state):
    """Under an elastic kolorun, one rank per host keeps the commit in the host's memory."""
    if is_elastic_launch() and _lifecycle.local_rank() == 0:
        _store().write(state._commit_number, state.serialize)


def _resume(state):
    """The start of an attempt: every rank takes the newest commit any host kept (none: rank 0's state)."""
    store = _store()
    numbers = _host.allgather([np.array([store.newest(with_payload=False)[0]], np.int64)],
                              ["kolo.elastic.commits"])[0]
    newest = int(numbers.max())
    root = int(np.flatnonzero(numbers == newest)[0]) if newest >= 0 else 0
    if newest >= 0 and _lifecycle.rank() == root:
        number, payload = store.newest()
        if number != newest:  # replaced under us: only a writer of this job could, and none runs yet
            raise KoloError("kolo.elastic: commit %d on rank %d changed while resuming" % (newest, root))
        state.deserialize(payload)
    state._commit_number = newest
    state.sync_root_rank = root
    try:
        state.sync()
    finally:
        state.sync_root_rank = 0
    if newest >= 0 and _lifecycle.rank() == 0:
        print("kolo.elastic: attempt %d on %d ranks resumes from commit %d (kept on rank %d's host)"
              % (_attempt(), _lifecycle.size(), newest, root), file=sys.stderr, flush=True)


# In every message of a peers' failure (kPeersFailedWords in src/comm/mpi/mpi_fault.h).
_PEERS_FAILED_WORDS = "a peer failed: the survivors roll back to their last commit"


def _peers_failed(error):
    # kolo.torch and the host path raise PeersFailedError; TensorFlow's ops (and XLA's) raise their
    # framework's error (TensorFlow makes it an InternalError) carrying kolo's message.
    return isinstance(error, PeersFailedError) or _PEERS_FAILED_WORDS in str(error)


def _min_np():
    """kolorun --in-place's --min-np: fewer survivors end the attempt."""
    return int(os.environ.get("KOLO_ELASTIC_MIN_NP", "1"))


def _recover(state):
    """Shrinks the job to the survivors, rolls the state back to its last commit and syncs it from rank 0,
    again over those left for as long as another peer fails meanwhile (MPI's shrink leaves out whoever
    failed before it agreed; a failure after it fails kolo's restart or the sync). The roll-back comes
    after the shrink: until recover_in_place returns, the failed step's GPU work may still write its
    outputs."""
    while True:
        try:
            _lifecycle.recover_in_place()
            state.restore()
            state.sync()
            return
        except Exception as e:  # noqa: BLE001 - as in _run_in_place
            if not _peers_failed(e):
                raise
            print("kolo.elastic: another peer failed during the recovery, which starts again: %s" % e, file=sys.stderr,
                  flush=True)


def _run_in_place(func, state, args, kwargs):
    """ULFM on (Open MPI 5, mpirun --with-ft ulfm): a lost peer is cut out in place. The survivors'
    ops fail with PeersFailedError; each rolls back to its last commit, kolo shrinks the job to them,
    they take rank 0's state and go on, no process restarted. The state is synced already."""
    while True:
        try:
            return func(state, *args, **kwargs)
        except Exception as e:  # noqa: BLE001 - a framework's own error may carry kolo's (TensorFlow's ops')
            if not _peers_failed(e):
                raise
            before, start = (_lifecycle.rank(), _lifecycle.size()), time.perf_counter()
            _recover(state)
            print("kolo.elastic: rank %d of %d: %s\nkolo.elastic: in place: now rank %d of %d, from commit %d "
                  "(restore, shrink, restart and sync: %.3f s)"
                  % (before[0], before[1], e, _lifecycle.rank(), _lifecycle.size(), state._commit_number,
                     time.perf_counter() - start),
                  file=sys.stderr, flush=True)
            if _lifecycle.size() < _min_np():
                # Every survivor sees the same size: all end the attempt, and an elastic kolorun
                # restarts the job from the last commit once --min-np slots are there.
                raise KoloError("kolo.elastic: %d ranks left in place, fewer than --min-np %d; ending this attempt"
                                % (_lifecycle.size(), _min_np()), ABORTED)
            state.on_reset()


def run_fn(func):
    """Horovod's elastic.run for a binding."""

    @functools.wraps(func)
    def wrapper(state, *args, **kwargs):
        in_place = _lifecycle.in_place_recovery()
        if not is_elastic_launch():
            state.sync()
            if in_place:
                return _run_in_place(func, state, args, kwargs)
            # No launcher to re-form the job: commits and restore() work in memory, and a lost peer
            # ends the job with kolo's error, as without elastic.
            return func(state, *args, **kwargs)
        signal.signal(signal.SIGUSR1, _on_hosts_changed)
        _resume(state)
        if _attempt() > 0:
            state.on_reset()
        try:
            # kolorun --in-place: failures are survived in place; the restart path remains for new
            # hosts and for a job left with fewer than --min-np ranks.
            result = _run_in_place(func, state, args, kwargs) if in_place else func(state, *args, **kwargs)
        except HostsUpdatedInterrupt:
            # Every rank agreed at a commit (check_host_updates): kolorun restarts the job on the new
            # hosts, from that commit.
            _lifecycle.shutdown()
            _lifecycle._exiting_with(RESTART_EXIT)
            sys.exit(RESTART_EXIT)
        except KoloError as e:
            # A recovery that failed leaves kolo shut down: the error names the rank it was.
            who = "rank %d" % _lifecycle.rank() if _lifecycle.is_initialized() else "a rank out of the job"
            print("kolo.elastic: %s: %s\nkolo.elastic: the job goes back to commit %d"
                  % (who, e, state._commit_number), file=sys.stderr, flush=True)
            raise
        _host.barrier()  # everyone is done with the commits before they go
        if _lifecycle.local_rank() == 0:
            _store().clear()
        return result

    return wrapper
