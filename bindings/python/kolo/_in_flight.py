"""Ops in flight, by the handle kolo gave them: what must stay alive until they end, and their results."""
import threading

from kolo._abi import OK, _C
from kolo._errors import error_for


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
        self._lock = threading.Lock()

    def add(self, handle, keep, finish, stream=None):
        # A call refused at once raised in the extension (kolo_* returns the refusal, with no handle);
        # anything else the op meets, it reports at synchronize(). No poll here: it was a C call and a
        # lock on every op, for a failure that the timing alone decided to report here or later.
        with self._lock:
            self._pending[handle] = Pending(keep, finish, stream)
        return handle

    def poll(self, handle):
        with self._lock:
            if handle not in self._pending:
                raise ValueError("unknown handle %r (never issued, or already synchronized)" % (handle,))
        return _C.poll(handle) == 1

    def synchronize(self, handle):
        with self._lock:
            pending = self._pending.pop(handle, None)
        if pending is None:
            raise ValueError("unknown handle %r (never issued, or already synchronized)" % (handle,))
        if pending.stream is not None:
            code, message, output = _C.wait_on_stream(handle, pending.stream())
        else:
            code, message, output = _C.wait(handle)
        if code != OK:
            raise error_for(code, message)
        return pending.finish(output)
