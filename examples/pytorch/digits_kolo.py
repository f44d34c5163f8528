"""A small convnet trained on scikit-learn's 8x8 digits, data-parallel with kolo.

    kolorun -np 2 python3 examples/pytorch/digits_kolo.py

Each rank takes its share of every batch; gradients are averaged across ranks, so training follows
the one-process run of digits.py. The lines marked "kolo" are what differs from digits.py, but for
--checkpoint (saved each epoch, resumed at the start), which elastic training by restart uses
(docs/kubernetes.md, "Elastic").
"""
import argparse
import os  # kolo
import sys  # kolo

import torch
import torch.nn.functional as F
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import kolo.torch as kolo  # kolo

parser = argparse.ArgumentParser()
parser.add_argument("--epochs", type=int, default=15)
parser.add_argument("--batch-size", type=int, default=64, help="the global batch, over all ranks")
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--no-cuda", action="store_true", help="train on the CPU where a GPU is usable too")
parser.add_argument("--checkpoint", help="a file (on storage every host sees) saved after each epoch and resumed from at "
                    "the start: elastic training by restart, as under torchrun --max-restarts")
args = parser.parse_args()
kolo.init()  # kolo
torch.set_num_threads(max(1, torch.get_num_threads() // kolo.local_size()))  # kolo: share the host's cores
device = torch.device("cuda" if torch.cuda.is_available() and not args.no_cuda else "cpu")
if device.type == "cuda":  # kolo: one GPU per rank (NCCL refuses two ranks on one GPU of a host)
    if kolo.local_rank() >= torch.cuda.device_count() and "NCCL_HOSTID" not in os.environ:
        sys.exit("rank %d: local rank %d has no GPU of its own (this host has %d): start at most that many ranks "
                 "per host, or pass --no-cuda" % (kolo.rank(), kolo.local_rank(), torch.cuda.device_count()))
    torch.cuda.set_device(kolo.local_rank() % torch.cuda.device_count())  # shared only as NCCL_HOSTID's hosts

digits = load_digits()
x = torch.tensor(digits.images, dtype=torch.float32).unsqueeze(1) / 16.0
y = torch.tensor(digits.target, dtype=torch.int64)
x_train, x_test, y_train, y_test = (t.to(device) for t in train_test_split(x, y, test_size=0.2, random_state=0))


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 16, 3, padding=1)
        self.fc1 = torch.nn.Linear(16 * 4 * 4, 64)
        self.fc2 = torch.nn.Linear(64, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv(x)), 2)
        return self.fc2(F.relu(self.fc1(x.flatten(1))))


torch.manual_seed(0)
model = Net().to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
first_epoch = 1
if args.checkpoint and kolo.rank() == 0 and os.path.exists(args.checkpoint):  # where the last run left off
    saved = torch.load(args.checkpoint, map_location=device)
    model.load_state_dict(saved["model"])
    optimizer.load_state_dict(saved["optimizer"])
    first_epoch = saved["epoch"] + 1
first_epoch = kolo.broadcast_object(first_epoch, root_rank=0, name="first_epoch")  # kolo
per_rank = args.batch_size // kolo.size()  # kolo
shard = slice(kolo.rank() * per_rank, (kolo.rank() + 1) * per_rank)  # kolo: this rank's share of a batch
kolo.broadcast_parameters(model.state_dict(), root_rank=0)  # kolo
if first_epoch > 1:
    kolo.broadcast_optimizer_state(optimizer, root_rank=0)  # kolo: the momentum rank 0 resumed
    if kolo.rank() == 0:
        print("resuming at epoch %d from %s on %d ranks" % (first_epoch, args.checkpoint, kolo.size()), flush=True)
optimizer = kolo.DistributedOptimizer(optimizer, named_parameters=model.named_parameters())  # kolo

for epoch in range(first_epoch, args.epochs + 1):
    order = torch.randperm(len(x_train), generator=torch.Generator().manual_seed(epoch)).to(device)
    model.train()
    for start in range(0, len(order) - args.batch_size + 1, args.batch_size):
        batch = order[start:start + args.batch_size][shard]
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x_train[batch]), y_train[batch])
        loss.backward()
        optimizer.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(x_test).argmax(1) == y_test).float().mean().item()
    loss = kolo.allreduce(loss.detach(), name="loss")  # kolo: the loss over the whole batch
    if kolo.rank() == 0:  # kolo
        print("epoch %2d  loss %.4f  test accuracy %.4f" % (epoch, loss.item(), accuracy), flush=True)
    if args.checkpoint and kolo.rank() == 0:  # kolo: rank 0 saves; written whole, then renamed over the last
        torch.save({"epoch": epoch, "model": model.state_dict(), "optimizer": optimizer.state_dict()},
                   args.checkpoint + ".tmp")
        os.replace(args.checkpoint + ".tmp", args.checkpoint)
