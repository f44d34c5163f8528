"""SyncBatchNorm: batch normalization whose statistics are those of the whole batch, every rank's
share together, as torch.nn.SyncBatchNorm and Horovod's SyncBatchNorm compute them.

Forward gathers each rank's (count, mean, variance) per channel and combines them (Chan's parallel
formula: no sum of squares to lose precision), so ranks may hold different numbers of rows.
Backward allreduces the two per-channel sums the input's gradient needs. The weight's and bias's
gradients stay this rank's share: DistributedOptimizer averages them like any other parameter's.
"""
import torch

from kolo import _process_sets
from kolo.torch import mpi_ops


def _per_channel(t, like):
    """A (C,) tensor shaped to broadcast over `like`'s (N, C, ...) layout."""
    return t.reshape((1, -1) + (1,) * (like.dim() - 2))


class _SyncBatchNormFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum, process_set):
        ctx.process_set = process_set
        channels = x.shape[1]
        dims = [d for d in range(x.dim()) if d != 1]
        count = x.numel() // channels
        mean = x.mean(dims)
        var = x.var(dims, unbiased=False) if count > 0 else torch.zeros_like(mean)
        # Every rank's (count, mean, variance), gathered in float64, then combined.
        mine = torch.cat([torch.tensor([float(count)], dtype=torch.float64, device=x.device),
                          mean.double(), var.double()]).unsqueeze(0)
        every = mpi_ops.allgather(mine, process_set=process_set)
        counts, means, variances = every[:, :1], every[:, 1:1 + channels], every[:, 1 + channels:]
        total = counts.sum()
        if total.item() <= 1:
            raise ValueError("SyncBatchNorm needs more than one value per channel over all ranks, got %d"
                             % int(total.item()))
        global_mean = (counts * means).sum(0) / total
        global_var = (counts * (variances + (means - global_mean) ** 2)).sum(0) / total
        if running_mean is not None:
            with torch.no_grad():
                running_mean.mul_(1 - momentum).add_(global_mean.to(running_mean.dtype), alpha=momentum)
                unbiased = global_var * (total / (total - 1))
                running_var.mul_(1 - momentum).add_(unbiased.to(running_var.dtype), alpha=momentum)
        mean = global_mean.to(x.dtype)
        invstd = torch.rsqrt(global_var + eps).to(x.dtype)
        y = (x - _per_channel(mean, x)) * _per_channel(invstd, x)
        if weight is not None:
            y = y * _per_channel(weight, x) + _per_channel(bias, x)
        ctx.save_for_backward(x, weight, mean, invstd)
        ctx.total = float(total.item())
        return y

    @staticmethod
    def backward(ctx, dy):
        x, weight, mean, invstd = ctx.saved_tensors
        dims = [d for d in range(x.dim()) if d != 1]
        xmu = x - _per_channel(mean, x)
        sum_dy = dy.sum(dims)
        sum_dy_xmu = (dy * xmu).sum(dims)
        # The input's gradient depends on every rank's rows through the mean and variance.
        totals = mpi_ops.allreduce(torch.cat([sum_dy, sum_dy_xmu]), op=mpi_ops.Sum, process_set=ctx.process_set)
        channels = x.shape[1]
        mean_dy = totals[:channels] / ctx.total
        mean_dy_xmu = totals[channels:] / ctx.total
        scale = invstd if weight is None else invstd * weight
        dx = _per_channel(scale, x) * (dy - _per_channel(mean_dy, x)
                                       - xmu * _per_channel(invstd * invstd * mean_dy_xmu, x))
        dweight = dbias = None
        if weight is not None:
            dweight = (dy * xmu * _per_channel(invstd, x)).sum(dims)
            dbias = sum_dy
        return dx, dweight, dbias, None, None, None, None, None


class SyncBatchNorm(torch.nn.modules.batchnorm._BatchNorm):
    """Batch normalization over the whole batch of every rank (Horovod's hvd.SyncBatchNorm).

    A drop-in for torch.nn.BatchNorm1d/2d/3d: in training the mean and variance are those of every
    rank's rows together (every rank of `process_set`); in evaluation, or on one rank, it is plain
    batch normalization.
    """

    def __init__(self, num_features, eps=1e-5, momentum=0.1, affine=True, track_running_stats=True,
                 process_set=mpi_ops.global_process_set):
        super().__init__(num_features, eps, momentum, affine, track_running_stats)
        self.process_set = process_set

    def _check_input_dim(self, input):
        if input.dim() < 2:
            raise ValueError("SyncBatchNorm expects at least 2D input (got %dD)" % input.dim())

    def forward(self, input):
        self._check_input_dim(input)
        if not self.training or _process_sets.set_size(self.process_set) == 1:
            return super().forward(input)
        # The momentum as torch's _BatchNorm computes it (None: a cumulative average).
        momentum = 0.0 if self.momentum is None else self.momentum
        if self.track_running_stats and self.num_batches_tracked is not None:
            self.num_batches_tracked.add_(1)
            if self.momentum is None:
                momentum = 1.0 / float(self.num_batches_tracked)
        running_mean = self.running_mean if self.track_running_stats else None
        running_var = self.running_var if self.track_running_stats else None
        return _SyncBatchNormFunction.apply(input, self.weight, self.bias, running_mean, running_var, self.eps,
                                            momentum, self.process_set)
