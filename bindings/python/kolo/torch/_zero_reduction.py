"""A sharded optimizer's gradients (zero_optimizer.py), bucket by bucket: each bucket's reduction started
from backward's hooks, as one tensor, and its result taken."""
import torch

from kolo._policy import scaling
from kolo.torch import _zero_join, mpi_ops
from kolo.torch._row_collectives import _reducescatter_into_async


def launch(opt, b):
    """Starts the bucket's reduction, as one tensor. Stage 1: the gradients copied into the bucket's
    gradient buffer (where they stay, as views, unless backward replaced them) and allreduced in place.
    Stage 2: the gradients packed into the packing buffer and reduce-scattered into this rank's shard,
    and the parameters' gradients freed."""
    if opt._training is None and not opt._joined:
        _zero_join.start_round(opt)
    for p in b.params:
        if p.grad is not None and p.grad.is_sparse:
            raise ValueError("DistributedOptimizer(zero_stage=%d): parameter '%s' has a sparse gradient, which "
                             "a sharded optimizer does not take (use zero_stage=0)" % (opt._stage, opt._names[p]))
    pre, post = scaling.predivide(opt._op, opt._predivide)
    name = opt._prefix + "grad.%d" % b.index
    if opt._stage == 1:
        flat = _gradient_buffer(b)
        for p, offset in zip(b.params, b.offsets):
            into = flat[offset:offset + p.numel()]
            if p.grad is None:
                into.zero_()
            elif p.grad.data_ptr() != into.data_ptr():  # not accumulated into our view already
                into.copy_(p.grad.reshape(-1))
        compressed, ctx = opt._compression.compress(flat)
        handle = mpi_ops.allreduce_async_(compressed, name=name, op=opt._op, prescale_factor=pre,
                                          postscale_factor=post, process_set=opt._process_set)
    else:
        pack = _pack_buffer(opt, b)
        flat = pack[:b.numel]
        torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).reshape(-1) for p in b.params],
                  out=flat)
        compressed, ctx = opt._compression.compress(flat)
        if compressed is flat:  # into this rank's shard of the gradients, kept from step to step
            shard = b.grad_shard if b.grad_shard is not None else flat.new_empty(b.count)
            b.grad_shard = shard
            handle = _reducescatter_into_async(flat, shard, name, opt._op, opt._process_set, pre, post)
        else:
            handle = mpi_ops.reducescatter_async(compressed, name=name, op=opt._op, process_set=opt._process_set,
                                                 prescale_factor=pre, postscale_factor=post)
        for p in b.params:
            p.grad = None
    opt._handles[b.index] = (handle, flat, compressed, ctx)
    opt._waiting[b.index] = set()  # launched


def _gradient_buffer(b):
    """Stage 1: the bucket's gradients, flat, kept from step to step; the parameters' .grad views of it."""
    if b.grad_flat is None:
        b.grad_flat = torch.empty_like(b.flat)
    return b.grad_flat


def _pack_buffer(opt, b):
    dtype = b.flat.dtype
    before = opt._packed.get(dtype)
    if before in opt._handles:
        finish(opt, before)
    if dtype not in opt._packs:
        opt._packs[dtype] = torch.empty(opt._most[dtype], dtype=dtype, device=b.flat.device)
    opt._packed[dtype] = b.index
    return opt._packs[dtype]


def finish(opt, index):
    """Waits for bucket `index`'s reduction and takes its result (stage 2: its packing buffer is free again)."""
    handle, flat, compressed, ctx = opt._handles.pop(index)
    result = mpi_ops.synchronize(handle)
    if opt._stage == 2:
        opt._grad_shards[index] = opt._compression.decompress(result, ctx)
        return
    if compressed is not flat:
        flat.copy_(opt._compression.decompress(compressed, ctx))
    b = opt._buckets[index]
    for p, offset in zip(b.params, b.offsets):
        p.grad = flat[offset:offset + p.numel()].view_as(p)
