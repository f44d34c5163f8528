"""RayExecutor.run's callbacks, as horovod.ray's: what rank 0 logs (kolo.ray.ray_logger.log) goes through a Ray queue
to the driver, which hands each value to every callback, in order, on the thread that called run()."""
import ray


class Logged:
    """run()'s callbacks: a queue the workers' kolo.ray.ray_logger sends to, and deliver(), which hands what came
    to each callback, in order, on the caller's thread. Without callbacks, nothing."""

    def __init__(self, executor, callbacks):
        self._executor, self._callbacks, self._queue = executor, list(callbacks or []), None
        for c in self._callbacks:
            if not callable(c):
                raise TypeError("RayExecutor: a callback must be callable, not %r" % (c,))

    def __enter__(self):
        if self._callbacks:
            from ray.util.queue import Queue
            self._queue = Queue(actor_options={"num_cpus": 0})
            self.configure()
        return self

    def configure(self):
        if self._queue is not None:
            ray.get([w.set_queue.remote(self._queue) for w in self._executor._started()])

    def deliver(self):
        if self._queue is None:
            return
        from ray.util.queue import Empty
        while True:
            try:
                value = self._queue.get_nowait()
            except Empty:
                return
            for c in self._callbacks:
                c(value)

    def __exit__(self, *exc):
        if self._queue is not None:
            try:
                ray.get([w.set_queue.remote(None) for w in self._executor.workers])
            except Exception:  # a worker gone with a failed run: nothing of it to reset
                pass
            self._queue.shutdown()
        return False
