"""An unchanged DDP program (its backend named on the command line) for the kolo backend's launch tests.

    python ddp_training.py BACKEND OUT [--fate kill|freeze]

Trains a small network on rows sharded by rank, then rank 0 saves the weights to OUT. With --fate, the last rank
is killed (or frozen) at the third step, and every other rank prints the error its step ended with and exits 3.
"""
import argparse
import os
import signal
import sys

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP

import kolo.torch  # noqa: F401 (registers the backend)

SAMPLES, STEPS = 48, 6


def network():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Tanh(), torch.nn.Linear(16, 2)).double()


def rows():
    g = torch.Generator().manual_seed(1)
    return torch.randn(SAMPLES, 8, generator=g).double(), torch.randn(SAMPLES, 2, generator=g).double()


def train_shard(model, opt, rank, size, steps=STEPS):
    """`steps` steps of this rank's rows (every size-th, from its rank)."""
    x, y = rows()
    for _ in range(steps):
        opt.zero_grad()
        torch.nn.functional.mse_loss(model(x[rank::size]), y[rank::size]).backward()
        opt.step()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("backend")
    parser.add_argument("out", nargs="?")
    parser.add_argument("--fate", choices=["kill", "freeze"])
    args = parser.parse_args()
    dist.init_process_group(args.backend)
    rank, size = dist.get_rank(), dist.get_world_size()
    net = network()
    ddp = DDP(net)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    x, y = rows()
    for step in range(STEPS):
        if args.fate and step == 2 and rank == size - 1:
            print("rank %d: %s at step %d" % (rank, args.fate, step), flush=True)
            os.kill(os.getpid(), signal.SIGKILL if args.fate == "kill" else signal.SIGSTOP)
        opt.zero_grad()
        try:
            torch.nn.functional.mse_loss(ddp(x[rank::size]), y[rank::size]).backward()
        except Exception as e:  # noqa: BLE001 (what the step ended with is the test's subject)
            print("rank %d step %d failed: %s" % (rank, step, e), flush=True)
            sys.exit(3)
        opt.step()
    if rank == 0 and args.out:
        torch.save([p.detach() for p in net.parameters()], args.out)
    print("rank %d of %d done on %s" % (rank, size, dist.get_backend()), flush=True)
    dist.destroy_process_group()


def one_process_weights():
    net, (x, y) = network(), rows()
    opt = torch.optim.SGD(net.parameters(), lr=0.1)
    for _ in range(STEPS):
        opt.zero_grad()
        torch.nn.functional.mse_loss(net(x), y).backward()
        opt.step()
    return [p.detach() for p in net.parameters()]


if __name__ == "__main__":
    main()
