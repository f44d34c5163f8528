"""DDP's step on the kolo backend beside DDP on Gloo, in one job: the same torchvision model twice, one DDP over
the default group (Gloo's), one over a kolo group of every rank (dist.new_group(backend="kolo")), random images,
iterations alternated (their order swapped every other one). img/s per rank, the ratio kolo / Gloo (higher is
better for kolo). With --fsdp, FSDP2's fully_shard on a stack of transformer blocks instead of DDP.

    torchrun --standalone --nproc_per_node 2 benchmarks/torch_backend_ddp.py [--model resnet50] [--batch-size 16]
    torchrun --standalone --nproc_per_node 2 benchmarks/torch_backend_ddp.py --fsdp
"""
import argparse
import os
import statistics
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

import kolo.torch  # noqa: F401 (registers the backend)

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--model", default="resnet50", help="a torchvision.models constructor")
parser.add_argument("--batch-size", type=int, default=16, help="images (or sequences) per rank and step")
parser.add_argument("--image-size", type=int, default=224)
parser.add_argument("--fsdp", action="store_true", help="FSDP2 on transformer blocks instead of DDP on --model")
parser.add_argument("--num-warmup", type=int, default=2)
parser.add_argument("--num-iters", type=int, default=6, help="timed steps of each, alternated")
args = parser.parse_args()

dist.init_process_group("gloo")
kolo_group = dist.new_group(backend="kolo")
rank, size = dist.get_rank(), dist.get_world_size()
torch.set_num_threads(max(1, (os.cpu_count() or 1) // int(os.environ.get("LOCAL_WORLD_SIZE", size))))


def transformer():
    torch.manual_seed(42)
    layer = torch.nn.TransformerEncoderLayer(d_model=512, nhead=8, dim_feedforward=2048, batch_first=True)
    return torch.nn.TransformerEncoder(layer, num_layers=6, enable_nested_tensor=False)


def build(group):
    if args.fsdp:
        from torch.distributed.device_mesh import DeviceMesh
        from torch.distributed.fsdp import fully_shard
        net = transformer()
        mesh = DeviceMesh.from_group(group or dist.group.WORLD, "cpu")
        for block in net.layers:
            fully_shard(block, mesh=mesh)
        return fully_shard(net, mesh=mesh)
    import torchvision
    torch.manual_seed(42)
    return torch.nn.parallel.DistributedDataParallel(getattr(torchvision.models, args.model)(), process_group=group)


torch.manual_seed(rank)
if args.fsdp:
    data, target = torch.randn(args.batch_size, 128, 512), torch.randn(args.batch_size, 128, 512)
    loss_of = F.mse_loss
else:
    data = torch.randn(args.batch_size, 3, args.image_size, args.image_size)
    target = torch.randint(0, 1000, (args.batch_size,))
    loss_of = F.cross_entropy

runs = {}
for name, group in (("Gloo", None), ("kolo", kolo_group)):
    net = build(group)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)

    def run(net=net, opt=opt):
        opt.zero_grad()
        loss_of(net(data), target).backward()
        opt.step()
    runs[name] = run

for run in runs.values():
    for _ in range(args.num_warmup):
        run()
times = {name: [] for name in runs}
for it in range(args.num_iters):
    for name, run in (runs.items() if it % 2 == 0 else reversed(list(runs.items()))):
        dist.barrier()
        start = time.perf_counter()
        run()
        times[name].append(time.perf_counter() - start)

every = [None] * size
dist.all_gather_object(every, times)
if rank == 0:
    what = "FSDP2, 6 transformer blocks (d_model 512)" if args.fsdp else "DDP, %s" % args.model
    print("torch %s, %s, batch %d per rank, %d ranks" % (torch.__version__, what, args.batch_size, size))
    medians = {}
    for name in runs:
        per_step = [max(ranks[name][i] for ranks in every) for i in range(args.num_iters)]  # the slowest rank's
        medians[name] = statistics.median(per_step)
        print("%-6s median step %.3f s, %.2f img/s per rank" % (name, medians[name], args.batch_size / medians[name]))
    print("kolo / Gloo speed: %.3f" % (medians["Gloo"] / medians["kolo"]))
dist.destroy_process_group()
