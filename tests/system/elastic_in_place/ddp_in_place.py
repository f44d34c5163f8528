"""An unchanged DDP loop on the kolo backend (init_process_group("kolo"), DistributedDataParallel with a comm hook)
inside kolo.torch.elastic (TorchState, run), for the in-place suite: float64 least squares on 48 fixed rows, each
rank taking an equal share of every batch, so that DDP's averaged gradient is the whole batch's at any rank count
and the weights after --steps updates are plain gradient descent's, whatever failed. A commit every 4 steps; with
--kill-at S, rank 2 of 3 SIGKILLs itself before step S. The survivors' DDP is the same object, made again by
kolo.torch.elastic on torch's re-made default group. Every rank prints its pid at the start and the end, and its
place in torch's world and kolo's; rank 0 saves the weights to --out."""
import os

import numpy as np
import torch
import torch.distributed as dist
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel

import kolo.torch as hvd

from least_squares import COMMIT_EVERY, LR, data, die_if_due, my_rows, parse_args

args = parse_args()
dist.init_process_group("kolo")
x, y = (torch.from_numpy(a) for a in data())
net = torch.nn.Linear(8, 1, bias=False).double()
torch.nn.init.zeros_(net.weight)
model = DistributedDataParallel(net)
# A hook whose state is the group itself: after the recovery it must be torch's new default group.
model.register_comm_hook(dist.distributed_c10d._get_default_group(), default_hooks.allreduce_hook)
optimizer = torch.optim.SGD(model.parameters(), lr=LR)


@hvd.elastic.run
def train(state):
    while state.step < args.steps:
        die_if_due(state.step, args.kill_at, dist.get_rank(), dist.get_world_size())
        mine = my_rows(dist.get_rank(), dist.get_world_size())
        optimizer.zero_grad()
        torch.mean((model(x[mine]) - y[mine]) ** 2).backward()
        optimizer.step()
        state.step += 1
        if state.step % COMMIT_EVERY == 0:
            state.commit()


print("rank %d of %d starts with pid %d" % (hvd.rank(), hvd.size(), os.getpid()), flush=True)
state = hvd.elastic.TorchState(model, optimizer, step=0)
train(state)
print("rank %d of %d ends with pid %d: torch's world rank %d of %d" % (
    hvd.rank(), hvd.size(), os.getpid(), dist.get_rank(), dist.get_world_size()), flush=True)
if hvd.rank() == 0:
    np.save(args.out, net.weight.detach().numpy().T)
    print("ranks %d  steps %d" % (hvd.size(), state.step), flush=True)
