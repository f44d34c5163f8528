"""PyTorch synthetic benchmark in the shape of Horovod's: a torchvision model on random images,
img/sec per rank and in total, kolo's DistributedOptimizer against torch DistributedDataParallel
over gloo in the same run (same model, ranks, batch and threads), rounds interleaved. With --cuda,
Horovod's GPU benchmark: model and data on GPU local_rank % GPUs, DDP over nccl.

    kolorun -np 2 python3 benchmarks/pytorch_synthetic.py [--model resnet18] [--batch-size 16] [--cuda]

Prints a table and the ratio kolo / DDP (higher is better for kolo); --json FILE writes it too.
"""
import argparse
import json
import os
import socket
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
import torchvision

import kolo.torch as kolo

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--model", default="resnet18", help="a torchvision.models constructor")
parser.add_argument("--batch-size", type=int, default=16, help="images per rank and step")
parser.add_argument("--image-size", type=int, default=224)
parser.add_argument("--num-warmup-batches", type=int, default=2)
parser.add_argument("--num-batches-per-iter", type=int, default=2)
parser.add_argument("--num-iters", type=int, default=5, help="timed iterations of each framework, interleaved")
parser.add_argument("--threads", type=int, default=0, help="torch threads per rank (0: the host's cores / ranks)")
parser.add_argument("--cuda", action="store_true", help="on GPU local_rank %% GPUs, DDP over nccl instead of gloo")
parser.add_argument("--json", default="")
args = parser.parse_args()

if args.cuda and not torch.cuda.is_available():
    raise SystemExit("--cuda: torch %s sees no GPU here" % torch.__version__)
if args.cuda:
    # Before any NCCL call (kolo's or DDP's): where a host's ranks outnumber its GPUs, each rank
    # claims an NCCL host of its own, since NCCL refuses two ranks on one GPU of one host.
    local_rank = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_RANK", "0"))
    local_size = int(os.environ.get("OMPI_COMM_WORLD_LOCAL_SIZE", "1"))
    if local_size > torch.cuda.device_count() and "NCCL_HOSTID" not in os.environ:
        os.environ["NCCL_HOSTID"] = "kolo-bench-%s" % os.environ.get("OMPI_COMM_WORLD_RANK", "0")
        os.environ.setdefault("NCCL_SOCKET_IFNAME", "lo")
    device = torch.device("cuda", local_rank % torch.cuda.device_count())
    torch.cuda.set_device(device)
else:
    device = torch.device("cpu")

kolo.init()
rank, size = kolo.rank(), kolo.size()
threads = args.threads or max(1, (os.cpu_count() or 1) // kolo.local_size())
torch.set_num_threads(threads)


def log(*a):
    if rank == 0:
        print(*a, flush=True)


# DDP's peer group over gloo: rank 0 names an address and a free port, kolo tells the others.
if rank == 0:
    with socket.socket() as s:
        s.bind(("", 0))
        port = s.getsockname()[1]
    address = "127.0.0.1" if kolo.cross_size() == 1 else socket.gethostbyname(socket.gethostname())
    endpoint = "tcp://%s:%d" % (address, port)
else:
    endpoint = None
endpoint = kolo.broadcast_object(endpoint, 0, name="ddp.endpoint")
ddp_backend = "nccl" if args.cuda else "gloo"
ddp_name = "DDP (%s)" % ddp_backend
dist.init_process_group(ddp_backend, init_method=endpoint, rank=rank, world_size=size)

torch.manual_seed(0)
data = torch.randn(args.batch_size, 3, args.image_size, args.image_size).to(device)
target = torch.randint(0, 1000, (args.batch_size,)).to(device)


def build():
    torch.manual_seed(42)
    return getattr(torchvision.models, args.model)().to(device)


kolo_model = build()
kolo_optimizer = kolo.DistributedOptimizer(torch.optim.SGD(kolo_model.parameters(), lr=0.01),
                                           named_parameters=kolo_model.named_parameters())
kolo.broadcast_parameters(kolo_model.state_dict(), root_rank=0)

ddp_model = torch.nn.parallel.DistributedDataParallel(build(), device_ids=[device.index] if args.cuda else None)
ddp_optimizer = torch.optim.SGD(ddp_model.parameters(), lr=0.01)


def step(model, optimizer):
    optimizer.zero_grad()
    F.cross_entropy(model(data), target).backward()
    optimizer.step()


def sync():
    """The GPU's queued work done, so that the clock times it (a no-op on the CPU)."""
    if args.cuda:
        torch.cuda.synchronize()


runs = {"kolo": lambda: step(kolo_model, kolo_optimizer), ddp_name: lambda: step(ddp_model, ddp_optimizer)}
params = sum(p.numel() for p in kolo_model.parameters())
log("Model: %s (%d parameters, %.1f MB of float32 gradients per step)" % (args.model, params, params * 4 / 1e6))
log("Batch size: %d per rank, %d ranks, %d torch threads per rank" % (args.batch_size, size, threads))
if args.cuda:
    log("Device: %s (rank 0 on cuda:%d)" % (torch.cuda.get_device_name(device), device.index))
for name, run in runs.items():
    for _ in range(args.num_warmup_batches):
        run()

rates = {name: [] for name in runs}
for it in range(args.num_iters):
    for name, run in (runs.items() if it % 2 == 0 else reversed(list(runs.items()))):
        sync()
        dist.barrier()
        start = time.perf_counter()
        for _ in range(args.num_batches_per_iter):
            run()
        sync()
        rate = args.batch_size * args.num_batches_per_iter / (time.perf_counter() - start)
        rates[name].append(rate)
        log("Iter #%d: %-10s %.2f img/sec per rank" % (it, name, rate))

# Mean over iterations and ranks, with Horovod's 1.96-sigma interval.
summary = {}
for name, mine in rates.items():
    every = kolo.allgather_object(mine, name="rates." + name)
    values = [v for r in every for v in r]
    mean = statistics.mean(values)
    ci = 1.96 * statistics.stdev(values) if len(values) > 1 else 0.0
    summary[name] = {"img_per_sec_per_rank": mean, "ci95": ci, "img_per_sec_total": mean * size}

log("")
log("%-12s %22s %16s" % ("", "img/sec per rank", "img/sec total"))
for name, s in summary.items():
    log("%-12s %14.2f +-%5.2f %16.2f" % (name, s["img_per_sec_per_rank"], s["ci95"], s["img_per_sec_total"]))
ratio = summary["kolo"]["img_per_sec_per_rank"] / summary[ddp_name]["img_per_sec_per_rank"]
log("ratio kolo / %s: %.3f" % (ddp_name, ratio))
if rank == 0 and args.json:
    with open(args.json, "w") as f:
        json.dump({"benchmark": "pytorch_synthetic", "model": args.model, "batch_size": args.batch_size,
                   "image_size": args.image_size, "ranks": size, "threads": threads, "cuda": args.cuda,
                   "results": summary, "ratio_kolo_over_ddp": ratio}, f, indent=2)
dist.destroy_process_group()
kolo.shutdown()
