"""A torch.compile'd model on the GPU (inductor's Triton kernels) trained with kolo.torch as a user would
write it: the weights after a few steps on each rank's share of every global batch equal, on every rank,
those of one process (each rank computes it in its own process, on its GPU, without kolo) training an
uncompiled copy on the whole batches with plain torch. The model, data, reference and checks are
tests/bindings/torch/compiled_training.py's, shared with the CPU test there. Skipped, saying why, on torch before
2.0; without a GPU, conftest.py skips it with the rest.
"""
import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "torch"))
import compiled_training as ct  # noqa: E402

import kolo.torch as kolo  # noqa: E402


@pytest.fixture
def fp32_matmuls():
    """Full float32 matmuls (no TF32) in both runs, so that only the summation order differs."""
    saved = torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = torch.backends.cudnn.allow_tf32 = False
    yield
    torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = saved


def test_compiled_model_on_the_gpu_trains_like_one_process_on_the_whole_batches(fp32_matmuls):
    reason = ct.compile_skip_reason("cuda")
    if reason is not None:  # the same on every rank: they skip together
        pytest.skip(reason)
    rank, size = kolo.rank(), kolo.size()
    device = torch.device("cuda", torch.cuda.current_device())  # conftest.py pinned this rank's GPU
    batches = ct.global_batches(size, device)
    model = ct.make_model(device)
    reference = ct.train_plain(model, batches)  # one process, the whole batches, no compile, no kolo
    model = ct.train_compiled_with_kolo(kolo, model, batches, rank)
    torch.cuda.synchronize()

    assert all(p.is_cuda for p in model.parameters())
    ct.check_trained_like_one_process(kolo, model, reference, batches, rank, size)
