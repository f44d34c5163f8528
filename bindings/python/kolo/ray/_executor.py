"""RayExecutor: horovod.ray's API on kolo. Ranks are Ray actors in kolo's Gloo world; the driver serves the
job's key-value store (as kolorun --gloo does), so no rank's loss takes the store with it."""
import secrets
from typing import Any, Callable, Dict, List, Optional

try:
    import ray
except ImportError as e:  # pragma: no cover - reported clearly
    raise ImportError("kolo.ray.RayExecutor needs Ray in this Python (pip install 'ray[default]'): %s" % e) from e

from kolo.ray import _layout
from kolo.ray._callbacks import Logged
from kolo.ray._placement import Placement, Shape
from kolo.ray._settings import RaySettings, create_settings
from kolo.ray._worker import Worker


class RayExecutor:
    """Runs functions on num_workers ranks (or num_hosts x num_workers_per_host), each a Ray actor.

        executor = RayExecutor(RayExecutor.create_settings(timeout_s=30), num_workers=4)
        executor.start()
        results = executor.run(train)    # train() calls hvd.init() (kolo.torch as hvd), as under kolorun
        executor.shutdown()

    Results come back by rank. A rank whose function raises ends the run: its error is raised here, naming the
    rank and its node, and every worker is stopped (the others may be waiting for it inside a collective, which
    is what kolorun does when a rank exits with an error); start() again for a new job.

    Elastic (min_workers, max_workers): start() takes as many workers as the cluster has room for, from
    min_workers to max_workers; a function written with kolo's elastic.run (state, commits) goes on in place
    when a worker or its node is lost, down to min_workers, and starts again from its next commit on more workers
    when the cluster has room for them; run() returns the results of the workers there are at the end.
    """

    @classmethod
    def create_settings(cls, timeout_s=30, ssh_identity_file=None, ssh_str=None, placement_group_timeout_s=100,
                        nics=None) -> RaySettings:
        return create_settings(timeout_s, ssh_identity_file, ssh_str, placement_group_timeout_s, nics)

    def __init__(self, settings=None, num_workers: Optional[int] = None, num_hosts: Optional[int] = None,
                 num_workers_per_host: int = 1, cpus_per_worker: float = 1, use_gpu: bool = False,
                 gpus_per_worker: Optional[float] = None, use_current_placement_group: bool = True,
                 min_workers: Optional[int] = None, max_workers: Optional[int] = None, reset_limit=None,
                 cooldown_range=None, elastic_timeout=None, override_discovery=True, cpus_per_slot=None,
                 gpus_per_slot=None, num_slots=None):
        self._elastic = min_workers is not None or max_workers is not None
        if self._elastic:
            min_workers = 1 if min_workers is None else min_workers
            if not isinstance(min_workers, int) or min_workers < 1 or (
                    max_workers is not None and (not isinstance(max_workers, int) or max_workers < min_workers)):
                raise ValueError("RayExecutor: min_workers must be a positive integer and max_workers at least that "
                                 "(or None), not %r and %r" % (min_workers, max_workers))
            if num_hosts is not None or cooldown_range is not None:
                raise NotImplementedError("RayExecutor: elastic mode on Ray takes min_workers, max_workers, "
                                          "reset_limit and elastic_timeout; num_hosts and cooldown_range are not "
                                          "supported there (docs/ray.md)")
            if reset_limit is not None and (not isinstance(reset_limit, int) or reset_limit < 0):
                raise ValueError("RayExecutor: reset_limit must be a non-negative integer (or None), not %r"
                                 % (reset_limit,))
            num_workers = max_workers or min_workers  # resized at start() to what the cluster holds
        # horovod.ray's older names (cpus_per_slot, gpus_per_slot, num_slots) mean the same.
        cpus_per_worker = cpus_per_slot if cpus_per_slot is not None else cpus_per_worker
        gpus_per_worker = gpus_per_slot if gpus_per_slot is not None else gpus_per_worker
        num_workers_per_host = num_slots if num_slots is not None else num_workers_per_host
        if gpus_per_worker and not use_gpu:
            raise ValueError("RayExecutor: gpus_per_worker=%r needs use_gpu=True" % gpus_per_worker)
        if (num_workers is None) == (num_hosts is None):
            raise ValueError("RayExecutor: give num_workers, or num_hosts with num_workers_per_host (not both)")
        for name, value in (("num_workers", num_workers), ("num_hosts", num_hosts),
                            ("num_workers_per_host", num_workers_per_host)):
            if value is not None and (not isinstance(value, int) or value < 1):
                raise ValueError("RayExecutor: %s must be a positive integer, not %r" % (name, value))
        if cpus_per_worker is None or cpus_per_worker < 0:
            raise ValueError("RayExecutor: cpus_per_worker must be 0 or more, not %r" % (cpus_per_worker,))
        self.settings = settings or create_settings()
        total = num_workers if num_workers is not None else num_hosts * num_workers_per_host
        self._shape = Shape(num_workers=total, cpus_per_worker=cpus_per_worker,
                            gpus_per_worker=(gpus_per_worker or 1) if use_gpu else 0, num_hosts=num_hosts)
        self._use_current_group = use_current_placement_group
        self._min_workers, self._max_workers = min_workers, max_workers
        self._elastic_timeout = 600 if elastic_timeout is None else elastic_timeout
        # Failures survived (as kolorun's --reset-limit counts them: growing onto new room is not one).
        self._reset_limit, self._resets, self._last_loss = reset_limit, 0, None
        self.workers: List[Any] = []  # in rank order, once started
        self._places: List[_layout.Place] = []
        self._placement = None
        self._store = None
        self._ended = None  # why the workers were stopped, after a rank failed
        self._started_with = None  # start()'s arguments, for an elastic restart
        self._elastic_job = None   # the elastic job's id, the same over its restarts (its commits are kept by it)
        self._attempt = 0

    @property
    def num_workers(self):
        return self._shape.num_workers

    def start(self, executable_cls: type = None, executable_args: Optional[List] = None,
              executable_kwargs: Optional[Dict] = None, extra_env_vars: Optional[Dict] = None):
        """Places the workers, gives each its rank, and builds executable_cls(*args, **kwargs) in each."""
        if self.workers:
            raise RuntimeError("RayExecutor.start(): already started; shutdown() first")
        self._started_with = (executable_cls, executable_args, executable_kwargs, extra_env_vars)
        if not ray.is_initialized():
            ray.init()
        from kolo._abi import _C
        try:
            if self._elastic:
                self._shape.num_workers = _elastic_size(self._shape, self._min_workers, self._max_workers,
                                                        self._elastic_timeout)
            current = ray.util.get_current_placement_group() if self._use_current_group else None
            self._placement = Placement(self._shape, self.settings.placement_group_timeout_s, group=current)
            actor = ray.remote(Worker)
            res = self._shape.per_worker()
            created = [actor.options(num_cpus=res["CPU"], num_gpus=res.get("GPU", 0),
                                     scheduling_strategy=self._placement.strategy(i)).remote()
                       for i in range(self._shape.num_workers)]
            places = [_layout.Place(*p) for p in ray.get([w.place.remote() for w in created])]
            seats = _layout.seats(places)
            gpus = _layout.visible_gpus(places, seats)
            token = secrets.token_hex(16)
            self._store = _C.StoreServer("0.0.0.0", 0, token)
            store = {"KOLO_STORE_ADDR": ray.util.get_node_ip_address(), "KOLO_STORE_PORT": str(self._store.port),
                     "KOLO_STORE_TOKEN": token, "KOLO_JOB_ID": "ray-" + secrets.token_hex(4),
                     "KOLO_GLOO_TIMEOUT_SECONDS": str(self.settings.timeout_s)}
            if self.settings.nics:
                store["KOLO_GLOO_IFACE"] = self.settings.nics[0]
            if self._elastic:
                # kolo.elastic.run's survivors go on in place, down to min_workers (the driver's store outlives
                # any rank).
                store.update(KOLO_GLOO_IN_PLACE="1", KOLO_ELASTIC_MIN_NP=str(self._min_workers))
                # kolo.elastic's restart path: room for more workers is said under the job's hosts_changed
                # key, every rank leaves at the next commit, and run() starts them again, more, from it.
                self._elastic_job = self._elastic_job or secrets.token_hex(6)
                store.update(KOLO_ELASTIC="1", KOLO_ELASTIC_JOB_ID=self._elastic_job,
                             KOLO_ELASTIC_ATTEMPT=str(self._attempt))
                self._job_key = "kolo/%s/hosts_changed" % store["KOLO_JOB_ID"]
            store.update({str(k): str(v) for k, v in (extra_env_vars or {}).items()})
            self.workers = [created[s.worker] for s in seats]
            self._places = [places[s.worker] for s in seats]
            envs = []
            for s in seats:
                env = _layout.rank_env(s, len(seats), store)
                if s.worker in gpus:
                    env["CUDA_VISIBLE_DEVICES"] = gpus[s.worker]
                envs.append(env)
            ray.get([w.set_env.remote(e) for w, e in zip(self.workers, envs)])
            ray.get([w.start_executable.remote(executable_cls, executable_args, executable_kwargs)
                     for w in self.workers])
            self._ended = None
        except BaseException:
            self.shutdown()
            raise

    def execute(self, fn: Callable[[Any], Any], callbacks=None) -> List[Any]:
        """fn(executable) on every rank; the results by rank. callbacks: as run()'s."""
        with Logged(self, callbacks) as logged:
            return self._gather([w.execute.remote(fn) for w in self._started()], logged.deliver)

    def run(self, fn: Callable[..., Any], args: Optional[List] = None, kwargs: Optional[Dict] = None,
            callbacks=None) -> List[Any]:
        """fn(*args, **kwargs) on every rank; the results by rank. callbacks: each is called, on this thread while
        the run goes on, with every value rank 0 logs (kolo.ray.ray_logger.log), as horovod.ray's are."""
        with Logged(self, callbacks) as logged:
            if self._elastic:
                return self._run_elastic(fn, args, kwargs, logged)
            return self._gather(self.run_remote(fn, args, kwargs), logged.deliver)

    def _run_elastic(self, fn, args, kwargs, logged):
        """run() in elastic mode: until the function returns on the workers there are, each time the cluster has
        room for more workers (up to max_workers), the ranks are told; they leave at their next commit, and the
        job starts again on more workers, from that commit."""
        while True:
            refs = self.run_remote(fn, args, kwargs)
            watch = _RoomWatch(self)
            try:
                results = self._gather(refs, logged.deliver)
            finally:
                watch.stop()
            if self.workers:
                return results
            if not watch.asked:
                raise RuntimeError("RayExecutor: every worker was lost (elastic: no survivor to go on from)")
            self._restart()
            logged.configure()  # the new attempt's workers

    def _restart(self):
        import time
        cls, args, kwargs, env = self._started_with
        held = {k: v * self._shape.num_workers for k, v in self._shape.per_worker().items() if v > 0}
        before = ray.available_resources()
        self.shutdown()
        # Ray frees the old group's resources a moment later: the new size counts them (else the job would start
        # small and be told of room again at once).
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(
                ray.available_resources().get(k, 0) < before.get(k, 0) + v for k, v in held.items()):
            time.sleep(0.2)
        self._attempt += 1
        self.start(cls, args, kwargs, env)

    def run_remote(self, fn: Callable[..., Any], args: Optional[List] = None,
                   kwargs: Optional[Dict] = None) -> List[Any]:
        """As run(), without waiting: one ObjectRef per rank, for ray.get."""
        return [w.run.remote(fn, list(args or []), dict(kwargs or {})) for w in self._started()]

    def execute_single(self, fn: Callable[[Any], Any]) -> Any:
        """fn(executable) on rank 0 alone (a function that runs no collective)."""
        return ray.get(self._started()[0].execute.remote(fn))

    def shutdown(self):
        """Stops every worker and frees its resources; the executor may be started again."""
        for w in self.workers:
            ray.kill(w, no_restart=True)
        self.workers = []
        if self._placement is not None:
            self._placement.remove()
            self._placement = None
        if self._store is not None:
            self._store.stop()
            self._store = None

    def _started(self):
        if self._ended:
            raise RuntimeError("RayExecutor: the workers were stopped after %s; start() again" % self._ended)
        if not self.workers:
            raise RuntimeError("RayExecutor: not started (call start() first)")
        return self.workers

    def _gather(self, refs, deliver=None):
        """The results by rank; at the first rank that fails, every worker is stopped and its error raised.
        Elastic: a worker lost (its actor or node gone) is left out, its survivors having gone on in place; the
        results are the survivors', in their first ranks' order, and they are the workers from then on."""
        rank_of = {ref: r for r, ref in enumerate(refs)}
        pending = list(refs)
        lost = set()
        while pending:
            # With callbacks, what rank 0 logged is delivered between the waits.
            done, pending = ray.wait(pending, num_returns=1, timeout=None if deliver is None else 0.1)
            if deliver is not None:
                deliver()
            if not done:
                continue
            try:
                ray.get(done[0])
            except ray.exceptions.RayActorError as e:
                if not self._elastic:
                    self._fail(rank_of[done[0]], e, "was lost")
                self._count_failure(rank_of[done[0]], e)
                lost.add(rank_of[done[0]])
            except Exception as e:
                self._fail(rank_of[done[0]], e, "failed")
        if deliver is not None:
            deliver()  # what was logged before the last rank returned
        if lost:
            kept = [r for r in range(len(refs)) if r not in lost]
            self.workers = [self.workers[r] for r in kept]
            self._places = [self._places[r] for r in kept]
            refs = [refs[r] for r in kept]
        return ray.get(list(refs))

    def _count_failure(self, r, e):
        """A lost worker: one failure, with the others lost within a second of it (a node's workers go together);
        past reset_limit failures, the job ends as a failed rank ends it."""
        import time
        now = time.monotonic()
        if self._last_loss is None or now - self._last_loss > 1.0:
            self._resets += 1
        self._last_loss = now
        if self._reset_limit is not None and self._resets > self._reset_limit:
            self._fail(r, e, "was lost, failure %d past reset_limit %d" % (self._resets, self._reset_limit))

    def _fail(self, r, e, how):
        """Stops every worker and raises `e`, naming rank `r`."""
        place = self._places[r]
        self._ended = "rank %d (node %s, %s) %s" % (r, place.ip, place.hostname, how)
        workers, self.workers = self.workers, []
        for w in workers:
            ray.kill(w, no_restart=True)
        e.add_note("kolo.ray: %s; every worker of the job was stopped" % self._ended)
        raise e


def _elastic_size(shape, min_workers, max_workers, timeout_s):
    """How many workers an elastic start takes: as many as the cluster has room for now, at most max_workers,
    waiting up to timeout_s for min_workers."""
    import time
    deadline = time.monotonic() + timeout_s
    while True:
        free = ray.available_resources()
        room = [int(free.get(k, 0) // v) for k, v in shape.per_worker().items() if v > 0]
        n = min(room) if room else max_workers or min_workers
        n = min(n, max_workers) if max_workers else n
        if n >= min_workers:
            return n
        if time.monotonic() > deadline:
            raise RuntimeError("RayExecutor: the cluster has room for %d workers of %s, fewer than min_workers %d, "
                               "after %g s (elastic_timeout)" % (n, shape.per_worker(), min_workers, timeout_s))
        time.sleep(1)


class _RoomWatch:
    """While an elastic run goes on: once the cluster has room for one more worker (below max_workers), says so
    to the ranks, once (the store's hosts_changed key: kolo's peer watch raises SIGUSR1 in each, as under an
    elastic kolorun)."""

    def __init__(self, executor, interval_s=1.0):
        import threading
        self.asked = False
        self._executor = executor
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, args=(interval_s,), daemon=True)
        self._thread.start()

    def _watch(self, interval_s):
        ex = self._executor
        while not self._stop.wait(interval_s):
            if ex._max_workers is not None and len(ex.workers) >= ex._max_workers:
                return
            free = ray.available_resources()
            room = [int(free.get(k, 0) // v) for k, v in ex._shape.per_worker().items() if v > 0]
            if room and min(room) >= 1 and ex._store is not None:
                ex._store.add(ex._job_key, 1)
                self.asked = True
                return

    def stop(self):
        self._stop.set()
        self._thread.join()
