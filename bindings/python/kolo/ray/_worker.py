"""The worker: one Ray actor per rank. It reports where it runs, takes its rank's variables before any kolo
code runs in it, builds the executable (horovod.ray's executable_cls) and runs the functions it is given."""
import os
import socket


class Worker:
    def __init__(self):
        self.executable = None

    def place(self):
        import ray
        return (ray.get_runtime_context().get_node_id(), ray.util.get_node_ip_address(), socket.gethostname(),
                tuple(str(g) for g in ray.get_gpu_ids()))

    def set_env(self, env):
        os.environ.update({str(k): str(v) for k, v in env.items()})

    def start_executable(self, executable_cls=None, args=None, kwargs=None):
        if executable_cls is not None:
            self.executable = executable_cls(*(args or []), **(kwargs or {}))

    def execute(self, fn):
        return fn(self.executable)

    def run(self, fn, args, kwargs):
        return fn(*args, **kwargs)

    def set_queue(self, queue):
        """Where kolo.ray.ray_logger.log sends, for run()'s callbacks (None: nowhere)."""
        from kolo.ray import ray_logger
        ray_logger.configure(queue)
