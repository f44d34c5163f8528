"""join() with a sharded optimizer (zero_optimizer.py): a rank out of data takes part in the others' steps.

Each round of reductions also counts the ranks still training (one small allreduce, started with the
round's first bucket). While some rank has joined, those still training tell it what follows each round
(a clip, a step, or neither), and the joined rank mirrors it with zero gradients, stepping its shard.
"""
import torch

from kolo import _process_sets
from kolo.torch import mpi_ops

STEP, CLIP, NO_STEP = 1.0, 2.0, 3.0


def start_round(opt):
    """A round of reductions starts: this rank is one of those still training."""
    if opt._untold:  # the last round was not stepped (a scaler skipped it): the joined ranks go on
        tell(opt, NO_STEP)
    opt._training = mpi_ops.allreduce_async(torch.ones(1, dtype=torch.int32, device="cpu"),
                                             name=opt._prefix + "training", op=mpi_ops.Sum,
                                             process_set=opt._process_set)


def end_round(opt):
    handle, opt._training = opt._training, None
    if handle is not None:
        still = int(mpi_ops.synchronize(handle)[0])
        opt._others_joined = still < _process_sets.set_size(opt._process_set)
        opt._untold = opt._others_joined


def tell(opt, what, max_norm=0.0, norm_type=0.0):
    """To the ranks that have joined: what this round does next (every rank still training tells the same)."""
    opt._untold = what == CLIP
    mpi_ops.allreduce(torch.tensor([what, max_norm, norm_type], dtype=torch.float64, device="cpu"),
                      name=opt._prefix + "next", op=mpi_ops.Max, process_set=opt._process_set)


def join_steps(opt):
    """join() on this rank: until every rank has joined, a round of reductions with zero gradients for each
    of the others', then what they do after it (clip, step, or neither), this rank stepping its shard."""
    if opt._untold:
        tell(opt, NO_STEP)
    opt._joined = True
    try:
        while True:
            still = mpi_ops.allreduce(torch.zeros(1, dtype=torch.int32, device="cpu"), name=opt._prefix + "training",
                                      op=mpi_ops.Sum, process_set=opt._process_set)
            if int(still[0]) == 0:
                return
            for p in opt._bucket_of:
                p.grad = None  # launch() sends zeros
            opt.synchronize()
            while True:
                what, max_norm, norm_type = mpi_ops.allreduce(
                    torch.zeros(3, dtype=torch.float64, device="cpu"), name=opt._prefix + "next", op=mpi_ops.Max,
                    process_set=opt._process_set).tolist()
                if what == CLIP:
                    opt.clip_grad_norm_(max_norm, norm_type)
                    continue
                if what == STEP:
                    with opt.skip_synchronize():
                        opt.step()
                break
    finally:
        opt._joined = False
        opt._others_joined = False
