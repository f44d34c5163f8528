"""Horovod itself beside kolo: the same work through `horovod.torch` and `kolo.torch` (the same code,
only the import differs), in jobs that alternate between the two in every round, both at their
defaults. Rows: the ResNet-50 gradient step (161 tensors through DistributedOptimizer's hooks, backward
+ step) and what it costs beyond the same step without communication (measured in the same job,
interleaved), one 4-byte allreduce, and Horovod's synthetic benchmark on ResNet-18 (img/s).

    sh tools/horovod_venv.sh        # Horovod 0.28.1 from its PyPI sdist into .venv-horovod (a few minutes, once)
    python3 benchmarks/horovod_peer.py --np 2 [--rounds 3] [--json out.json]

Each job: `mpirun -np N .venv-horovod/bin/python benchmarks/horovod_peer.py --worker horovod|kolo`
(the venv sees Debian's torch; kolo comes from --build's python/ on PYTHONPATH).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def parse_args():
    p = argparse.ArgumentParser()
    p.add_argument("--worker", choices=["horovod", "kolo"], help="(internal) run the work in this job")
    p.add_argument("--np", type=int, default=2)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--python", default=os.path.join(ROOT, ".venv-horovod", "bin", "python"))
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--steps", type=int, default=10, help="gradient steps per job")
    p.add_argument("--latency-ops", type=int, default=300)
    p.add_argument("--batch-size", type=int, default=16, help="ResNet-18 images per rank")
    p.add_argument("--iters", type=int, default=3, help="ResNet-18 timed iterations per job")
    p.add_argument("--json", default="")
    return p.parse_args()


def worker(args):
    from mpi4py import MPI  # first: MPI starts with MPI_THREAD_MULTIPLE, which both libraries need

    import torch
    import torch.nn.functional as F
    import torchvision

    sys.path.insert(0, HERE)
    from gradient_shapes import read_shapes

    if args.worker == "horovod":
        import horovod.torch as hvd
    else:
        import kolo.torch as hvd
    hvd.init()
    comm = MPI.COMM_WORLD
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // hvd.local_size()))

    def slowest(seconds):
        return comm.allreduce(seconds, op=MPI.MAX)

    # The ResNet-50 gradient step: the loss sum(p * w) makes each gradient w.
    shapes = read_shapes()
    params = [torch.nn.Parameter(torch.zeros(s)) for _, s in shapes]
    weights = [torch.ones(s) for _, s in shapes]
    opt = hvd.DistributedOptimizer(torch.optim.SGD(params, lr=0.0),
                                   named_parameters=[(n, p) for (n, _), p in zip(shapes, params)])

    # The same step on a copy without communication: what the step costs locally.
    local_params = [torch.nn.Parameter(torch.zeros(s)) for _, s in shapes]
    local_opt = torch.optim.SGD(local_params, lr=0.0)

    def gradient_step(ps, o):
        o.zero_grad()
        sum((p * w).sum() for p, w in zip(ps, weights)).backward()
        o.step()

    def timed(fn):
        comm.Barrier()
        start = time.perf_counter()
        fn()
        return slowest(time.perf_counter() - start)

    gradient_step(params, opt)
    gradient_step(local_params, local_opt)
    steps, local = [], []
    for _ in range(args.steps):  # interleaved, so that drift hits both alike
        local.append(timed(lambda: gradient_step(local_params, local_opt)))
        steps.append(timed(lambda: gradient_step(params, opt)))
    assert params[0].grad.flatten()[0].item() == 1.0  # the Average of every rank's ones

    # One small allreduce, as a loop reduces its loss or a metric.
    one = torch.ones(1)
    for _ in range(20):
        hvd.allreduce(one, name="latency")
    lat = [timed(lambda: hvd.allreduce(one, name="latency")) for _ in range(args.latency_ops)]
    assert hvd.allreduce(one, name="latency").item() == 1.0

    # Horovod's synthetic benchmark, ResNet-18.
    torch.manual_seed(42)
    model = torchvision.models.resnet18()
    sgd = hvd.DistributedOptimizer(torch.optim.SGD(model.parameters(), lr=0.01),
                                   named_parameters=model.named_parameters())
    hvd.broadcast_parameters(model.state_dict(), root_rank=0)
    data = torch.randn(args.batch_size, 3, 224, 224)
    target = torch.randint(0, 1000, (args.batch_size,))

    def train_step():
        sgd.zero_grad()
        F.cross_entropy(model(data), target).backward()
        sgd.step()

    train_step()
    rates = [args.batch_size / timed(train_step) for _ in range(args.iters)]

    if hvd.rank() == 0:
        print("RESULT " + json.dumps({"framework": args.worker, "step_seconds": statistics.median(steps),
                                      "communication_seconds": statistics.median(steps) - statistics.median(local),
                                      "latency_seconds": statistics.median(lat),
                                      "img_per_sec_per_rank": statistics.mean(rates)}), flush=True)
    hvd.shutdown()


ROWS = [("ResNet-50 gradient step (ms)", "step_seconds", 1e3, "kolo / horovod time"),
        ("  its communication beyond the local step", "communication_seconds", 1e3, "kolo / horovod time"),
        ("one 4-byte allreduce (us)", "latency_seconds", 1e6, "kolo / horovod time"),
        ("synthetic ResNet-18, img/s per rank", "img_per_sec_per_rank", 1.0, "kolo / horovod img/s")]


def table_lines(ranks, rounds, summary):
    """The table this benchmark prints, from its summary (also what benchmarks/tables.py renders from the
    saved JSON into benchmarks/README.md)."""
    lines = ["# horovod.torch 0.28.1 and kolo.torch, the same script, %d ranks, both at defaults; median of %d "
             "jobs each, alternated" % (ranks, rounds),
             "%-38s %12s %12s %8s" % ("", "horovod", "kolo", "ratio")]
    for label, key, scale, meaning in ROWS:
        row = summary[key]
        lines.append("%-38s %12.2f %12.2f %8.3f   (%s)" % (label, row["horovod"] * scale, row["kolo"] * scale,
                                                           row["ratio"], meaning))
    return lines


def run_job(args, framework):
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               PYTHONPATH=os.path.join(os.path.abspath(args.build), "python"))
    cmd = ["mpirun", "-np", str(args.np), "--oversubscribe", "--bind-to", "none", "-x", "PYTHONPATH", args.python,
           os.path.abspath(__file__), "--worker", framework, "--steps", str(args.steps),
           "--latency-ops", str(args.latency_ops), "--batch-size", str(args.batch_size), "--iters", str(args.iters)]
    job = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    lines = [line for line in job.stdout.splitlines() if line.startswith("RESULT ")]
    if job.returncode != 0 or not lines:
        raise SystemExit("%s job failed (exit %d):\n%s\n%s" % (framework, job.returncode, job.stdout, job.stderr[-3000:]))
    return json.loads(lines[-1][len("RESULT "):])


def main():
    args = parse_args()
    if args.worker:
        worker(args)
        return
    if not os.path.exists(args.python):
        raise SystemExit("no Horovod venv at %s: run `sh tools/horovod_venv.sh` first" % args.python)
    results = {"horovod": [], "kolo": []}
    for r in range(args.rounds):
        for framework in (("horovod", "kolo") if r % 2 == 0 else ("kolo", "horovod")):
            results[framework].append(run_job(args, framework))
            print("round %d %-8s %s" % (r, framework, json.dumps(results[framework][-1])), flush=True)

    def median(framework, key):
        return statistics.median(x[key] for x in results[framework])

    summary = {}
    for _, key, _, _ in ROWS:
        h, k = median("horovod", key), median("kolo", key)
        summary[key] = {"horovod": h, "kolo": k, "ratio": k / h}
    print("\n" + "\n".join(table_lines(args.np, args.rounds, summary)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"benchmark": "horovod_peer", "ranks": args.np, "rounds": results, "summary": summary}, f,
                      indent=2)


if __name__ == "__main__":
    main()
