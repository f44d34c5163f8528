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
    model = ct.train_compiled_with_kolo(kolo, model, batches, rank)

    ct.check_trained_like_one_process(kolo, model, reference, batches, rank, size)
