"""A torch.compile'd model trained with kolo.torch as a user would write it (CPU tensors, inductor's C++
kernels): the weights after a few steps on each rank's share of every global batch equal, on every rank,
those of one process training an uncompiled copy on the whole batches with plain torch (compiled_training.py
has the model, data, reference and the checks). Skipped, saying why, on torch before 2.0 (Debian's 1.13) and
where inductor has no C++ compiler.
"""
import pytest
import torch

import compiled_training as ct
import kolo.torch as kolo


def test_compiled_model_trains_like_one_process_on_the_whole_batches(rank, size):
    reason = ct.compile_skip_reason("cpu")
    if reason is not None:  # the same on every rank: they skip together
        pytest.skip(reason)
    device = torch.device("cpu")
    batches = ct.global_batches(size, device)
    model = ct.make_model(device)
    reference = ct.train_plain(model, batches)  # one process, the whole batches, no compile, no kolo

    # The user's script. Ranks other than 0 start from other weights: broadcast_parameters must fix that.
    if rank != 0:
        with torch.no_grad():
            for p in model.parameters():
                p.add_(0.5 * rank)
    ct.reset_compile_counters()
    model = torch.compile(model)
    kolo.broadcast_parameters(model.state_dict(), root_rank=0)
    optimizer = kolo.DistributedOptimizer(ct.make_optimizer(model.parameters()),
                                          named_parameters=model.named_parameters())
    ct.train(model, optimizer, batches, ct.shard(rank))

    ct.check_trained_like_one_process(kolo, model, reference, batches, rank, size)
