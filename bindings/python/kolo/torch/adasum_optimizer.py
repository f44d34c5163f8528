"""DistributedOptimizer(op=Adasum): Horovod's delta optimizer. Each rank takes its optimizer's step
on its own gradients; the step's change to every parameter (its delta) is combined across ranks with
Adasum, and every rank applies the combined delta from where the step started. Adasum then adapts
to the learning rate and the optimizer (momentum, Adam's scaling) in use, not just to the gradients.

Where Horovod steps each parameter inside backward's hooks to overlap the communication, kolo steps
them all at step() and reduces the deltas there as one fused request: the same updates for every
optimizer whose parameters update independently (all of torch.optim's), without changing a
parameter while backward may still read it."""
import contextlib

import torch

from kolo import _process_sets
from kolo.torch import mpi_ops


class _DistributedAdasumOptimizer:
    def __init__(self, params, named_parameters, compression, backward_passes_per_step, process_set):
        super(self.__class__, self).__init__(params)
        self._process_set = process_set
        self._compression = compression
        self._passes = backward_passes_per_step
        all_params = [p for group in self.param_groups for p in group["params"]]
        if named_parameters is not None:
            named_parameters = list(named_parameters)
            names = {p: n for n, p in named_parameters}
            unnamed = [i for i, p in enumerate(all_params) if p not in names]
            if unnamed:
                raise ValueError("named_parameters lacks %d of the optimizer's parameters (indices %s)"
                                 % (len(unnamed), unnamed[:10]))
        else:
            names = {p: "param.%d" % i for i, p in enumerate(all_params)}
        self._names = names
        self._parameter_names = names  # Horovod's name for it

    def synchronize(self):
        """Nothing to wait for: the deltas are combined in step()."""

    @contextlib.contextmanager
    def skip_synchronize(self):
        raise AssertionError("skip_synchronize does not apply to the Adasum optimizer: it combines the step's "
                             "deltas, not the gradients")

    def step(self, closure=None):
        params = [p for group in self.param_groups for p in group["params"] if p.requires_grad]
        starts = [p.detach().clone() for p in params]
        loss = super(self.__class__, self).step(closure)
        if not self._process_set.included() or _process_sets.set_size(self._process_set) == 1:
            return loss  # outside the set, or alone in it: this rank's own step
        handles = []
        for p, start in zip(params, starts):
            with torch.no_grad():
                p.sub_(start)  # p holds its delta now
            compressed, ctx = self._compression.compress(p.detach())
            handle = mpi_ops.allreduce_async_(compressed, name="delta." + self._names[p], op=mpi_ops.Adasum,
                                              process_set=self._process_set)
            handles.append((p, start, handle, compressed, ctx))
        error = None
        for p, start, handle, compressed, ctx in handles:
            try:
                mpi_ops.synchronize(handle)
            except Exception as e:  # wait for every handle before raising, so none is left in flight
                error = error or e
                with torch.no_grad():
                    p.copy_(start)
                continue
            with torch.no_grad():
                p.copy_(start + self._compression.decompress(compressed, ctx).to(p.dtype))
        if error is not None:
            raise error
        return loss
