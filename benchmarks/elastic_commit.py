"""What an elastic commit costs, ResNet-50-sized: kolo.torch.elastic.TorchState with torchvision's
ResNet-50 and SGD with momentum (25.6 M parameters, twice that in state). Horovod's commit is the
in-memory copy (save()); kolo's under an elastic kolorun adds keeping the commit in the host's memory
(/dev/shm) so that restarted workers resume from it. Both in the same run, interleaved.

    kolorun -np 2 python3 benchmarks/elastic_commit.py [--rounds 5]

Rank 0 prints the median of each and the ratio (kolo's commit / the in-memory copy alone).
"""
import argparse
import os
import statistics
import tempfile
import time

import torch
import torchvision

import kolo.torch as kolo

parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
parser.add_argument("--rounds", type=int, default=5)
parser.add_argument("--model", default="resnet50")
args = parser.parse_args()

kolo.init()
torch.set_num_threads(max(1, torch.get_num_threads() // kolo.local_size()))
model = getattr(torchvision.models, args.model)()
optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
for p in model.parameters():
    p.grad = torch.zeros_like(p)
optimizer.step()  # momentum buffers: the state a commit copies
state = kolo.elastic.TorchState(model, optimizer, epoch=0, batch=0)
state_bytes = sum(t.numel() * t.element_size() for t in model.state_dict().values())
state_bytes += sum(v.numel() * v.element_size() for s in optimizer.state_dict()["state"].values()
                   for v in s.values() if torch.is_tensor(v))

in_memory, elastic = [], []
with tempfile.TemporaryDirectory(dir="/dev/shm" if os.path.isdir("/dev/shm") else None) as store_root:
    for _ in range(args.rounds):
        kolo.barrier()
        t = time.perf_counter()
        state.save()  # Horovod's commit (and check_host_updates, which is nothing without a driver)
        in_memory.append(time.perf_counter() - t)
        kolo.barrier()
        os.environ.update(KOLO_ELASTIC="1", KOLO_ELASTIC_JOB_ID="bench", KOLO_ELASTIC_COMMIT_DIR=store_root)
        t = time.perf_counter()
        state.commit()  # save(), the copy into /dev/shm (local rank 0), the hosts-changed agreement
        elastic.append(time.perf_counter() - t)
        del os.environ["KOLO_ELASTIC"]
if kolo.rank() == 0:
    a, b = statistics.median(in_memory), statistics.median(elastic)
    print("%s state %.0f MB, %d ranks, median of %d rounds" % (args.model, state_bytes / 1e6, kolo.size(), args.rounds))
    print("%-52s %8.1f ms" % ("in-memory copy (Horovod's commit)", a * 1e3))
    print("%-52s %8.1f ms" % ("kolo commit under elastic kolorun (+ /dev/shm)", b * 1e3))
    print("ratio kolo / in-memory copy: %.2fx" % (b / a))
