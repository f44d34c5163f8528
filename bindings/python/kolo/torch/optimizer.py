"""DistributedOptimizer: averages gradients across ranks while backward is still running."""

import torch

from kolo import _process_sets
from kolo.torch import mpi_ops
from kolo.torch.adasum_optimizer import _DistributedAdasumOptimizer
from kolo._abi import COMPRESSION_NONE
from kolo._policy import grouping, scaling
from kolo._policy.compression import engine_compression
from kolo.torch.compression import Compression
from kolo.torch._parameters import (parameter_names, register_accumulate_hooks, remove_accumulate_hooks,
                                     skipping_synchronize, synchronize_for_step)
from kolo.torch.zero_optimizer import _ZeroOptimizer, check_elementwise

# What each bucket of a sharded optimizer carries (its gradients' reduction, its parameters' allgather).
_ZERO_BUCKET_BYTES = 25 << 20

# Marks a gradient reduced as a sparse tensor (gathered indices and values): its result replaces it.
_SPARSE = object()


class _DistributedOptimizer:
    """Mixed into the user's optimizer class (see DistributedOptimizer): its step() first waits for
    the gradients' allreduces, which hooks started the moment backward produced each gradient."""

    def __init__(self, params, named_parameters, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, groups, sparse_as_dense, process_set):
        super(self.__class__, self).__init__(params)
        self._process_set = process_set
        self._compression = compression
        self._sparse_as_dense = sparse_as_dense
        self._op = op
        scaling.check_predivide(op, gradient_predivide_factor)
        self._predivide = gradient_predivide_factor
        self._passes = backward_passes_per_step

        all_params = [p for group in self.param_groups for p in group["params"]]
        self._names = parameter_names(all_params, named_parameters)

        self._group_of = _groups_of(groups, all_params)  # parameter -> its group (reduced together)
        self._ready = set()                # parameters of groups waiting for their last gradient
        self._densified = set()            # sparse gradients being reduced dense (sparse_as_dense)
        self._parameter_names = self._names  # Horovod's name for it
        self._handles = {}                 # parameter -> (handle or None, compressed tensor, ctx)
        self._delay = {p: self._passes for p in all_params}
        self._requires_update = {p for p in all_params if p.requires_grad}
        self._synchronized = False
        self._should_synchronize = True
        self._hook_refs = []
        # Ranks outside the process set step on their own gradients, as in Horovod.
        self._reducing = bool(process_set.included()) and _process_sets.set_size(process_set) > 1
        if self._reducing:
            self._register_hooks()

    def _register_hooks(self):
        self._hook_refs += register_accumulate_hooks(self, self._requires_update, _DistributedOptimizer._on_gradient)

    def __del__(self):
        remove_accumulate_hooks(getattr(self, "_hook_refs", ()))

    def _on_gradient(self, p):
        if p in self._handles and self._handles[p][0] is not None and self._delay[p] <= 0:
            raise AssertionError(
                "Gradients were computed more than backward_passes_per_step times before step() or "
                "synchronize(). Raise backward_passes_per_step to accumulate gradients locally.")
        self._delay[p] -= 1
        self._handles[p] = (None, None, None)
        if self._delay[p] == 0:
            self._start(p)

    def _start(self, p):
        """Starts p's allreduce, or with groups, its group's once every member's gradient is in."""
        group = self._group_of.get(p)
        if group is None:
            self._handles[p] = self._allreduce_async(p)
            return
        self._ready.add(p)
        if all(q in self._ready for q in group):
            for q in group:
                self._ready.discard(q)
                self._handles[q] = self._allreduce_async(q)

    def _allreduce_async(self, p):
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        name = "grad." + self._names[p]
        grad = p.grad
        if grad.is_sparse:  # an embedding's gradient, say
            if not self._sparse_as_dense:
                return (mpi_ops.sparse_allreduce_async(grad, name=name, op=self._op, process_set=self._process_set),
                        None, _SPARSE)
            # Reduced dense, and made sparse again for the update (SparseAdam takes sparse ones only).
            grad = grad.to_dense()
            self._densified.add(p)
        code = engine_compression(self._compression, grad.dtype == torch.float32)
        if code is None:
            compressed, ctx = self._compression.compress(grad)
        else:  # kolo compresses in its pack and unpack: the gradient is reduced where it lies
            compressed, ctx = grad, None
        pre, post = scaling.predivide(self._op, self._predivide)
        handle = mpi_ops.allreduce_async_(compressed, name=name, op=self._op,
                                          prescale_factor=pre, postscale_factor=post, process_set=self._process_set,
                                          _compression=COMPRESSION_NONE if code is None else code)
        return handle, compressed, ctx

    def synchronize(self):
        """Waits for every gradient's allreduce (starting those backward did not reach, so that
        every rank submits the same names) and writes the results into the gradients."""
        if not self._reducing:
            self._synchronized = True
            return
        self._ready.clear()
        for p in self._requires_update - set(self._handles):
            self._handles[p] = self._allreduce_async(p)
        for p, (handle, _, _) in list(self._handles.items()):
            if handle is None:
                self._handles[p] = self._allreduce_async(p)
        error = None
        for p, (handle, compressed, ctx) in self._handles.items():
            try:
                result = mpi_ops.synchronize(handle)
            except Exception as e:  # wait for every handle before raising, so none is left in flight
                error = error or e
                continue
            if ctx is _SPARSE:
                p.grad = result
            elif p in self._densified:
                self._densified.discard(p)
                p.grad = self._compression.decompress(compressed, ctx).to_sparse()
            elif compressed is not p.grad:
                p.grad.copy_(self._compression.decompress(compressed, ctx))
            self._delay[p] = self._passes
        self._handles.clear()
        self._synchronized = error is None  # a failed one (a peer lost, say) leaves no step to take
        if error is not None:
            raise error

    def _abandon_in_flight(self):
        """After a failed step (a peer lost: backward's hooks or synchronize() raised), forgets the
        step's allreduces, waiting for each so none is left in the engine, and their results: the
        state is being restored to a commit, and zero_grad() must not take them for a step in flight."""
        for handle, _, _ in self._handles.values():
            if handle is not None:
                try:
                    mpi_ops.synchronize(handle)
                except Exception:  # noqa: BLE001 - the failure is what is being recovered from
                    pass
        self._handles.clear()
        self._ready.clear()
        self._densified.clear()
        self._delay = {p: self._passes for p in self._delay}
        self._synchronized = False

    def skip_synchronize(self):
        """For step() after an explicit synchronize() (to clip gradients in between, say)."""
        return skipping_synchronize(self)

    def step(self, closure=None):
        synchronize_for_step(self)
        return super(self.__class__, self).step(closure)

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but before optimizer.step() "
                                 "or optimizer.synchronize(); the gradients' allreduces are still in flight.")
        return super(self.__class__, self).zero_grad(*args, **kwargs)


def _groups_of(groups, all_params):
    """Horovod's `groups`: lists of parameters whose gradients are reduced together, once all of them
    are ready (an int: that many groups of consecutive parameters, near-equal in size as Horovod splits
    them). Each parameter -> its group."""
    if groups is None or groups == 0:
        return {}
    if isinstance(groups, int):
        if groups < 0:
            raise ValueError("num_groups must be positive, got %d" % groups)
        groups = grouping.split_list(all_params, groups)
    known = set(all_params)
    group_of = {}
    for group in groups:
        group = list(group)
        for p in group:
            if p not in known:
                raise ValueError("groups: a parameter of a group is not one of the optimizer's parameters")
            if p in group_of:
                raise ValueError("groups: a parameter is in more than one group")
            group_of[p] = group
    return group_of


def DistributedOptimizer(optimizer, named_parameters=None, compression=Compression.none, backward_passes_per_step=1,
                         op=mpi_ops.Average, gradient_predivide_factor=1.0, num_groups=0, groups=None,
                         sparse_as_dense=False, process_set=mpi_ops.global_process_set, zero_stage=0,
                         bucket_bytes=_ZERO_BUCKET_BYTES):
    """Wraps `optimizer` so that step() applies gradients averaged (op) across every rank.

    Each gradient's allreduce starts as soon as backward has produced it, overlapping communication
    with the rest of backward. With backward_passes_per_step=k, gradients accumulate locally over k
    backward passes and are reduced once. Sparse gradients (an embedding's, with sparse=True) are
    reduced as sparse tensors (every rank's rows gathered), or as dense ones with sparse_as_dense.
    The returned object is an instance of the optimizer's own class, so schedulers and checkpoints
    work as before.

    groups (lists of parameters) or num_groups (that many groups of consecutive parameters): each
    group's gradients are reduced together, once all of them are ready, as in Horovod. process_set:
    gradients are averaged over its ranks; ranks outside it step on their own gradients.

    op=Adasum: Horovod's delta optimizer (kolo/torch/adasum_optimizer.py): each rank steps on its own
    gradients and the steps' changes are combined with Adasum.

    zero_stage=1 or 2 (beyond Horovod; kolo/torch/zero_optimizer.py): the optimizer's state sharded across
    the ranks of the process set (ZeRO), each stepping its shard and the updated shards allgathered into
    the parameters; stage 2 also reduce-scatters the gradients, so each rank keeps only its shard of them
    (the parameters' .grad are None after backward). bucket_bytes: how much of the parameters each
    gradient reduction and parameter allgather carries. Checkpoints: consolidate_state_dict(to=rank) on
    every rank, then state_dict() on that rank.
    """
    if zero_stage not in (0, 1, 2):
        raise ValueError("zero_stage must be 0 (no sharding), 1 (the optimizer's state) or 2 (its state and the "
                         "gradients), got %r" % (zero_stage,))
    if zero_stage:
        if op == mpi_ops.Adasum or num_groups or groups is not None or sparse_as_dense:
            raise ValueError("DistributedOptimizer(zero_stage=%d) takes none of op=Adasum, num_groups, groups and "
                             "sparse_as_dense (its buckets are its groups)" % zero_stage)
        check_elementwise(optimizer, zero_stage)
        cls = type(optimizer.__class__.__name__, (optimizer.__class__,),
                   {k: v for k, v in _ZeroOptimizer.__dict__.items() if k not in ("__dict__", "__weakref__")})
        sharded = cls(optimizer.param_groups, named_parameters, zero_stage, compression, backward_passes_per_step, op,
                      gradient_predivide_factor, process_set, bucket_bytes)
        if optimizer.state:  # restored from a checkpoint before wrapping: sharded now
            sharded.load_state_dict(optimizer.state_dict())
        return sharded
    # The mixin's own methods only: its '__dict__' and '__weakref__' slots are descriptors that apply
    # to _DistributedOptimizer instances alone, and copied over they break every use of the new
    # instance's __dict__ (load_state_dict, LR schedulers, broadcast_optimizer_state).
    mixin = _DistributedAdasumOptimizer if op == mpi_ops.Adasum else _DistributedOptimizer
    methods = {k: v for k, v in mixin.__dict__.items() if k not in ("__dict__", "__weakref__")}
    cls = type(optimizer.__class__.__name__, (optimizer.__class__,), methods)
    if op == mpi_ops.Adasum:
        scaling.check_predivide(op, gradient_predivide_factor)
        distributed = cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step,
                          process_set)
    else:
        if num_groups and groups is not None:
            raise ValueError("pass num_groups or groups, not both")
        distributed = cls(optimizer.param_groups, named_parameters, compression, backward_passes_per_step, op,
                          gradient_predivide_factor, groups if groups is not None else num_groups, sparse_as_dense,
                          process_set)
    # The state the optimizer has already (momentum restored from a checkpoint before wrapping, as
    # in Horovod's MNIST example) stays with it: the parameter groups are shared, and so is the state.
    distributed.state = optimizer.state
    return distributed
