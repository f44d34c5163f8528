"""torch.distributed's Work over a kolo op: wait(), is_completed(), and the future DDP's comm hooks chain on.

An op's result is made once, by whichever thread gets there first: the caller's wait(), or, for an op whose
future was asked for, the completion thread (nobody else would complete a future that torch waits on in C++).
"""
import atexit
import queue
import threading

import torch
import torch.distributed as dist

from kolo._errors import KoloError
from kolo.torch._handles import poll, synchronize


_DONE_LOCK = threading.Lock()


class KoloWork(dist._Work):
    def __init__(self, handle=None, finish=None, result=None, devices=None):
        super().__init__()
        # A finished op's Work (every blocking call's) shares one lock: nothing waits on it for long.
        self._lock = threading.Lock() if handle is not None else _DONE_LOCK
        self._handle = handle
        self._finish = finish
        self._done = handle is None
        self._result = result
        self._error = None
        self._future = None
        self._devices = devices or []

    def _complete(self):
        with self._lock:
            if not self._done:
                try:
                    output = synchronize(self._handle)
                    self._result = self._finish(output) if self._finish is not None else output
                except BaseException as e:  # the op's failure belongs to whoever waits for it
                    self._error = e
                self._done = True
                future = self._future
            else:
                future = None
        if future is not None:
            future.set_result(None)

    def wait(self, timeout=None):
        # kolo's peer watch bounds the wait (KOLO_PEER_TIMEOUT_SECONDS); torch's per-op timeout is not kolo's.
        self._complete()
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self):
        if self._done:
            return True
        try:
            return bool(poll(self._handle))
        except ValueError:  # taken by the completion thread, which is waiting for it now
            return self._done

    def is_success(self):
        return self.is_completed() and self._error is None

    def exception(self):
        return self._error

    def result(self):
        self.wait()
        return self._result if isinstance(self._result, list) else [self._result]

    def get_future(self):
        # The future handed out is a callback's, so that a failed op is an error C++ sees (DDP's reducer reads the
        # value in C++): Future.set_exception from Python stores the exception as the value.
        with self._lock:
            if self._future is not None:
                return self._outcome_future
            self._future = torch.futures.Future(devices=self._devices) if self._devices else torch.futures.Future()
            self._outcome_future = self._future.then(self._outcome)
            future, done = self._future, self._done
        if done:
            future.set_result(None)
        else:
            _completions.put(self)
        return self._outcome_future

    def _outcome(self, _):
        if self._error is not None:
            raise self._error if isinstance(self._error, Exception) else KoloError(str(self._error))
        return self._result


def done_work(result, devices=None):
    """A Work for an op that has finished already (a blocking call, or a GPU op now ordered on its stream)."""
    return KoloWork(None, None, result, devices)


class _Completions:
    """One thread that completes, in order, the ops whose future someone holds.

    At the interpreter's exit it ends what it has begun and stops, before Python stops its daemon threads: stopped
    inside a future's completion (torch's C++, which takes the GIL back to run the callbacks chained on it) it would
    abort the process, as a script that leaves with a future's callback running did."""

    STOP_SECONDS = 10.0  # at most, for the ops queued before the exit (each ends, or fails on a lost peer)

    def __init__(self):
        self._queue = queue.SimpleQueue()
        self._thread = None
        self._lock = threading.Lock()

    def put(self, work):
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="kolo-torch-futures", daemon=True)
                self._thread.start()
                atexit.register(self._stop)
        self._queue.put(work)

    def _run(self):
        while True:
            work = self._queue.get()
            if work is None:
                return
            work._complete()

    def _stop(self):
        with self._lock:
            thread, self._thread = self._thread, None
        if thread is not None:
            self._queue.put(None)
            thread.join(self.STOP_SECONDS)


_completions = _Completions()
