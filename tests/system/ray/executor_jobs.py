"""Driver for the RayExecutor tests: runs horovod.ray-idiom jobs on the Ray cluster at RAY_ADDRESS (or a local
one) and prints one JSON line per result, which tests/system/ray/test_ray_executor.py checks.

    python executor_jobs.py train|train_tf|failure|unplaceable|executable|elastic|grow
                            [--hosts H --per-host W | --workers N | --min N --max M]
"""
import argparse
import json
import os
import sys
from pathlib import Path

import ray

from kolo.ray import RayExecutor

LAUNCH_TESTS = str(Path(__file__).resolve().parents[1] / "torch_backend")


def say(kind, value):
    print("RESULT " + json.dumps({"kind": kind, "value": value}), flush=True)


def train():
    """The Horovod idiom, as a horovod.ray user writes it (kolo.torch imported as hvd)."""
    import socket
    import torch
    import kolo.torch as hvd
    sys.path.insert(0, LAUNCH_TESTS)
    from ddp_training import network, rows, STEPS
    hvd.init()
    model = network()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    x, y = rows()
    r, n = hvd.rank(), hvd.size()
    for _ in range(STEPS):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x[r::n]), y[r::n]).backward()
        opt.step()
    return {"rank": r, "size": n, "local_rank": hvd.local_rank(), "local_size": hvd.local_size(),
            "cross_size": hvd.cross_size(), "host": socket.gethostname(),
            "weights": [p.detach().flatten().tolist() for p in model.parameters()]}


TF_ROWS, TF_FEATURES, TF_STEPS, TF_LR = 16, 4, 10, 0.1


def tf_problem(seed):
    """Least squares in float64, the data the same on every rank; the weights seeded by `seed` (each rank its
    own, so that only the broadcast from rank 0 makes them agree)."""
    import numpy as np
    data = np.random.default_rng(1234)
    x = data.normal(size=(TF_ROWS, TF_FEATURES))
    y = x @ np.arange(1.0, TF_FEATURES + 1).reshape(-1, 1) + 0.5 + 0.1 * data.normal(size=(TF_ROWS, 1))
    init = np.random.default_rng(seed)
    return x, y, init.normal(size=(TF_FEATURES, 1)), init.normal(size=(1,))


def train_tf():
    """TensorFlow 2 in Horovod's idiom (kolo.tensorflow imported as hvd): the variables broadcast from rank 0, a
    tf.function step through DistributedGradientTape on this rank's rows."""
    import socket
    import tensorflow as tf
    import kolo.tensorflow as hvd
    hvd.init()
    x, y, w0, b0 = tf_problem(seed=hvd.rank())
    w, b = tf.Variable(w0), tf.Variable(b0)
    hvd.broadcast_variables([w, b], root_rank=0)
    r, n = hvd.rank(), hvd.size()
    xs, ys = tf.constant(x[r::n]), tf.constant(y[r::n])

    @tf.function
    def step():
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(tf.matmul(xs, w) + b - ys))
        grads = hvd.DistributedGradientTape(tape).gradient(loss, [w, b])
        for var, grad in zip([w, b], grads):
            var.assign_sub(TF_LR * grad)

    for _ in range(TF_STEPS):
        step()
    return {"rank": r, "size": n, "local_rank": hvd.local_rank(), "local_size": hvd.local_size(),
            "cross_size": hvd.cross_size(), "host": socket.gethostname(),
            "weights": [w.numpy().flatten().tolist(), b.numpy().flatten().tolist()]}


def tf_one_process_weights():
    """The same steps in one process, by hand in numpy: what every rank must end with."""
    x, y, w, b = tf_problem(seed=0)
    for _ in range(TF_STEPS):
        err = x @ w + b - y
        w, b = w - TF_LR * 2 * x.T @ err / TF_ROWS, b - TF_LR * 2 * err.mean(axis=0)
    return [w.flatten().tolist(), b.flatten().tolist()]


def fail_on_rank_1():
    import kolo.torch as hvd
    import torch
    hvd.init()
    if hvd.rank() == 1:
        raise ValueError("rank 1's batch is bad")
    hvd.allreduce(torch.ones(1), name="waits.for.rank.1")  # the others wait here for rank 1, which never comes


def lose_this_node():
    """The node's loss at once: its raylet (this worker's parent) and every process it started, the other workers
    among them. Ray ends a node's workers itself once it sees its raylet gone, but CI saw the other worker of the
    node go on through the rest of the job first."""
    import signal
    raylet = os.getppid()
    for pid in (int(p) for p in os.listdir("/proc") if p.isdigit()):
        try:
            with open("/proc/%d/stat" % pid) as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile
        if parent == raylet and pid != os.getpid():
            os.kill(pid, signal.SIGKILL)
    os.kill(raylet, signal.SIGKILL)


def elastic_train(fate, driver_ip):
    """horovod.ray's elastic idiom: the state committed every step, each step the whole batch split across the
    ranks there are (so any size gives one process's step). At step 2 the last rank is lost: its actor killed,
    or (fate "node") its whole node, raylet and workers; the last rank off the driver's node then, since Ray
    places ranks on either node first and the driver's raylet is the driver's too."""
    import signal
    import torch
    import kolo.torch as hvd
    sys.path.insert(0, LAUNCH_TESTS)
    from ddp_training import network, rows, STEPS
    hvd.init()
    model = network()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model, opt, batch=0)
    first_size = hvd.size()
    nodes = hvd.allgather_object(ray.util.get_node_ip_address())
    victim = first_size - 1 if fate != "node" else max(r for r, ip in enumerate(nodes) if ip != driver_ip)

    @hvd.elastic.run
    def train(state):
        x, y = rows()
        while state.batch < STEPS:
            r, n = hvd.rank(), hvd.size()
            if state.batch == 2 and n == first_size and r == victim:
                if fate == "node":
                    lose_this_node()
                os.kill(os.getpid(), signal.SIGKILL)
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x[r::n]), y[r::n]).backward()
            opt.step()
            state.batch += 1
            state.commit()

    train(state)
    return {"rank": hvd.rank(), "size": hvd.size(), "first_size": first_size,
            "weights": [p.detach().flatten().tolist() for p in model.parameters()]}


GROW_STEPS = 24


def grow_train():
    """The elastic idiom again, a step every half second: a node joins the cluster meanwhile, and the job goes
    on from its next commit on more workers. Rank 0 logs each commit to the driver's callback."""
    import time
    import torch
    import kolo.torch as hvd
    from kolo.ray import ray_logger
    sys.path.insert(0, LAUNCH_TESTS)
    from ddp_training import network, rows
    hvd.init()
    model = network()
    opt = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.1),
                                   named_parameters=model.named_parameters())
    state = hvd.elastic.TorchState(model, opt, batch=0)

    @hvd.elastic.run
    def train(state):
        x, y = rows()
        while state.batch < GROW_STEPS:
            r, n = hvd.rank(), hvd.size()
            opt.zero_grad()
            torch.nn.functional.mse_loss(model(x[r::n]), y[r::n]).backward()
            opt.step()
            state.batch += 1
            # Before the commit: a commit told of new room saves, then leaves (the next attempt goes on from it).
            ray_logger.log({"attempt": int(os.environ["KOLO_ELASTIC_ATTEMPT"]), "batch": state.batch, "size": n})
            state.commit()
            time.sleep(0.5)

    train(state)
    return {"rank": hvd.rank(), "size": hvd.size(), "attempt": int(os.environ["KOLO_ELASTIC_ATTEMPT"]),
            "weights": [p.detach().flatten().tolist() for p in model.parameters()]}


def logs():
    """kolo.ray.ray_logger, horovod.ray's: rank 0's values (the default) and every rank's (chief_only=False)."""
    import kolo.torch as hvd
    from kolo.ray import ray_logger
    hvd.init()
    for i in range(3):
        ray_logger.log({"i": i, "rank": hvd.rank()})
    ray_logger.log({"every": hvd.rank()}, chief_only=False)
    return hvd.rank()


class Tally:
    """A callback of the other kind horovod.ray takes: an object with __call__."""

    def __init__(self):
        self.calls = 0

    def __call__(self, value):
        self.calls += 1


class Counter:
    def __init__(self, start):
        self.n = start

    def bump(self):
        import kolo.torch as hvd
        hvd.init()
        self.n += 1
        return self.n + 100 * hvd.rank()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("job")
    parser.add_argument("--hosts", type=int)
    parser.add_argument("--per-host", type=int, default=1)
    parser.add_argument("--workers", type=int)
    parser.add_argument("--min", type=int)
    parser.add_argument("--max", type=int)
    parser.add_argument("--fate", default="actor")
    parser.add_argument("--reset-limit", type=int)
    args = parser.parse_args()
    ray.init(runtime_env={"env_vars": {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}})
    shape = dict(num_hosts=args.hosts, num_workers_per_host=args.per_host) if args.hosts else \
        dict(min_workers=args.min, max_workers=args.max, reset_limit=args.reset_limit) if args.min else \
        dict(num_workers=args.workers)
    settings = RayExecutor.create_settings(timeout_s=120, placement_group_timeout_s=10)
    executor = RayExecutor(settings, **shape)
    try:
        if args.job == "unplaceable":
            try:
                executor.start()
            except RuntimeError as e:
                say("error", str(e))
            return
        if args.job == "executable":
            executor.start(executable_cls=Counter, executable_args=[5])
            say("execute", executor.execute(lambda c: c.bump()))
            say("single", executor.execute_single(lambda c: c.n))
            say("remote", ray.get(executor.run_remote(lambda a, b=0: a + b, args=[1], kwargs={"b": 2})))
            return
        executor.start()
        if args.job == "train":
            say("train", executor.run(train))
            got, tally = [], Tally()
            say("logs_result", executor.run(logs, callbacks=[got.append, tally]))
            say("logged", got)
            say("tally", tally.calls)
        elif args.job == "train_tf":
            say("train_tf", executor.run(train_tf))
        elif args.job == "grow":
            import subprocess
            import threading
            import time

            def join_later():
                time.sleep(5)  # the first attempt is training by then
                subprocess.run(os.environ["RAY_CLUSTER_JOIN"], shell=True, check=True, timeout=120)
            joiner = threading.Thread(target=join_later)
            joiner.start()
            commits = []
            say("grow", executor.run(grow_train, callbacks=[commits.append]))
            joiner.join()
            say("commits", commits)
            say("workers_after", len(executor.workers))
        elif args.job == "elastic":
            try:
                say("elastic", executor.run(elastic_train, args=[args.fate, ray.util.get_node_ip_address()]))
            except ray.exceptions.RayActorError as e:
                say("error", {"type": type(e).__name__, "notes": getattr(e, "__notes__", [])})
            say("workers_after", len(executor.workers))
        elif args.job == "failure":
            try:
                executor.run(fail_on_rank_1)
            except ValueError as e:
                say("error", {"message": str(e).splitlines()[-1], "notes": getattr(e, "__notes__", [])})
            try:
                executor.run(train)
            except RuntimeError as e:
                say("after", str(e))
            executor.shutdown()
            executor.start()
            say("again", [r["rank"] for r in executor.run(train)])
    finally:
        executor.shutdown()
        ray.shutdown()


if __name__ == "__main__":
    main()
