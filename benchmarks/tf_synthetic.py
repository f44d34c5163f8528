"""Horovod's synthetic benchmark on TensorFlow 2 (a Keras application model on random images, images/s
per worker and in total), with kolo.tensorflow's DistributedGradientTape against tf.distribute's
MultiWorkerMirroredStrategy (its own collectives on CPU, workers found through TF_CONFIG), the same
model, batch and step, in rounds that take the two in turn on the same machine.

    python3 benchmarks/tf_synthetic.py [--np 2] [--rounds 3] [--model ResNet50] [--image-size 64] [--batch-size 8]

The driver (this script without --worker) starts each job: kolo's through kolorun, the strategy's as
--np processes with TF_CONFIG on local ports. Prints one table: each mode's median total images/s over
the rounds and the ratio kolo / strategy (above 1: kolo faster).
"""
import argparse
import json
import os
import re
import socket
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--worker", choices=["kolo", "strategy"], help="(internal) run one worker of a job")
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--model", default="ResNet50")
    parser.add_argument("--image-size", type=int, default=64)
    parser.add_argument("--batch-size", type=int, default=8, help="per worker")
    parser.add_argument("--warmup-batches", type=int, default=3)
    parser.add_argument("--batches-per-iter", type=int, default=3)
    parser.add_argument("--iters", type=int, default=5)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--python", default=os.path.join(ROOT, ".venv", "bin", "python"))
    parser.add_argument("--json", default="")
    return parser.parse_args()


def worker(args):
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import numpy as np
    import tensorflow as tf

    # One core's worth of threads per worker, the same for both modes (the workers share the machine).
    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(2)
    # The strategy configures TensorFlow's collectives: before anything starts TensorFlow's runtime.
    strategy = tf.distribute.MultiWorkerMirroredStrategy() if args.worker == "strategy" else None
    shape = (args.batch_size, args.image_size, args.image_size, 3)

    def make_model():
        return getattr(tf.keras.applications, args.model)(weights=None, input_shape=shape[1:], classes=1000)

    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    data = tf.random.uniform(shape, seed=1)
    target = tf.random.uniform((args.batch_size,), maxval=1000, dtype=tf.int64, seed=2)
    if args.worker == "kolo":
        import kolo.tensorflow as hvd
        hvd.init()
        rank, size = hvd.rank(), hvd.size()
        model = make_model()
        opt = tf.keras.optimizers.SGD(0.01)

        @tf.function
        def step(first):
            with tf.GradientTape() as tape:
                loss = loss_fn(target, model(data, training=True))
            tape = hvd.DistributedGradientTape(tape)
            grads = tape.gradient(loss, model.trainable_variables)
            opt.apply_gradients(zip(grads, model.trainable_variables))
            if first:
                hvd.broadcast_variables(model.variables, root_rank=0)
                hvd.broadcast_variables(opt.variables, root_rank=0)
            return loss

        def run_step(i):
            step(i == 0)
    else:
        resolver = strategy.cluster_resolver
        rank, size = resolver.task_id, strategy.num_replicas_in_sync
        with strategy.scope():
            model = make_model()
            opt = tf.keras.optimizers.SGD(0.01)

        @tf.function
        def step():
            def replica_step():
                with tf.GradientTape() as tape:
                    loss = loss_fn(target, model(data, training=True))
                grads = tape.gradient(loss, model.trainable_variables)
                # apply_gradients inside a replica context all-reduces (averages) the gradients.
                opt.apply_gradients(zip(grads, model.trainable_variables))
                return loss
            return strategy.run(replica_step)

        def run_step(_):
            step()

    for i in range(args.warmup_batches):
        run_step(i)
    rates = []
    for _ in range(args.iters):
        start = time.perf_counter()
        for i in range(args.batches_per_iter):
            run_step(args.warmup_batches + i)
        rates.append(args.batch_size * args.batches_per_iter / (time.perf_counter() - start))
    if rank == 0:
        print("RESULT %s %.4f %d" % (args.worker, float(np.median(rates)), size), flush=True)


def free_ports(n):
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("localhost", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def worker_args(args, mode):
    return [args.python, os.path.abspath(__file__), "--worker", mode, "--model", args.model, "--image-size",
            str(args.image_size), "--batch-size", str(args.batch_size), "--warmup-batches", str(args.warmup_batches),
            "--batches-per-iter", str(args.batches_per_iter), "--iters", str(args.iters)]


def result(output, mode):
    found = re.search(r"RESULT %s ([0-9.]+) (\d+)" % mode, output)
    if not found:
        raise SystemExit("the %s job printed no result:\n%s" % (mode, output[-3000:]))
    return float(found.group(1))


def run_kolo(args):
    env = dict(os.environ, PYTHONPATH=os.path.join(args.build, "python"), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    job = subprocess.run([os.path.join(args.build, "bin", "kolorun"), "-np", str(args.np)] + worker_args(args, "kolo"),
                         capture_output=True, text=True, env=env, timeout=1800)
    return result(job.stdout + job.stderr, "kolo")


def run_strategy(args):
    ports = free_ports(args.np)
    workers = ["localhost:%d" % p for p in ports]
    jobs = []
    for i in range(args.np):
        env = dict(os.environ, TF_CONFIG=json.dumps({"cluster": {"worker": workers}, "task": {"type": "worker",
                                                                                             "index": i}}))
        jobs.append(subprocess.Popen(worker_args(args, "strategy"), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, env=env))
    outputs = [j.communicate(timeout=1800)[0] for j in jobs]
    return result(outputs[0], "strategy")


def main():
    args = parse_args()
    if args.worker:
        return worker(args)
    rates = {"kolo": [], "strategy": []}
    for _ in range(args.rounds):
        rates["kolo"].append(run_kolo(args))
        rates["strategy"].append(run_strategy(args))
    kolo, strategy = statistics.median(rates["kolo"]), statistics.median(rates["strategy"])
    print("# %s, %dx%d images, batch %d per worker, %d workers on one machine; images/s per worker (rank 0), "
          "median of %d iterations x %d rounds" % (args.model, args.image_size, args.image_size, args.batch_size,
                                                   args.np, args.iters, args.rounds))
    print("%-46s %12s %12s" % ("", "img/s/worker", "img/s total"))
    print("%-46s %12.2f %12.2f" % ("kolo.tensorflow DistributedGradientTape", kolo, kolo * args.np))
    print("%-46s %12.2f %12.2f" % ("tf.distribute MultiWorkerMirroredStrategy", strategy, strategy * args.np))
    print("ratio kolo / strategy: %.3f   (rounds: kolo %s, strategy %s)"
          % (kolo / strategy, ["%.2f" % r for r in rates["kolo"]], ["%.2f" % r for r in rates["strategy"]]))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "tf_synthetic", "args": vars(args), "images_per_second_per_worker": rates}, f,
                      indent=2)


if __name__ == "__main__":
    sys.exit(main())
