"""DistributedOptimizer(zero_stage=1|2): the optimizer's state sharded across the ranks (ZeRO stages 1 and 2).

Each rank keeps the optimizer's state (momentum, Adam's moments) for its shard of the parameters only
(_zero_layout.py says where the shards lie) and steps that shard alone; the updated shards are then
allgathered into every rank's parameters. Stage 1 allreduces the gradients as the unsharded optimizer does;
stage 2 reduce-scatters them, so each rank receives, and keeps, its shard's gradients only (each
parameter's .grad is freed as soon as backward has handed it over). Both start their collectives from
backward's hooks, bucket by bucket, as the unsharded optimizer does.

The parameters of each bucket are moved into one flat buffer (each parameter a view of it), so that a
rank's shard of a float32 bucket is a view of its parameters: the inner optimizer updates them in place,
and whatever else writes into the parameters (broadcast_parameters, a model's load_state_dict) is seen.
16-bit parameters get a float32 master copy of the shard, refreshed from the parameters when something
other than the step wrote into them.
"""

import itertools

import torch

from kolo import _process_sets
from kolo.torch import functions, mpi_ops
from kolo._policy import scaling
from kolo.torch._parameters import (hyperparameters, parameter_names, register_accumulate_hooks,
                                     remove_accumulate_hooks, skipping_synchronize, synchronize_for_step)
from kolo.torch import _join, _zero_checkpoint, _zero_join, _zero_reduction
from kolo.torch._row_collectives import _allgather_into_async
from kolo.torch._zero_layout import make_buckets

# Optimizers whose step updates each element from that element's gradient and state alone: a shard of
# the flat parameters steps exactly as the same elements would inside the whole.
_ELEMENTWISE = tuple(getattr(torch.optim, n) for n in ("SGD", "Adam", "AdamW", "Adagrad", "RMSprop", "Adadelta",
                                                          "Adamax", "NAdam", "RAdam", "Rprop", "ASGD")
                     if hasattr(torch.optim, n))


_instances = itertools.count()  # each sharded optimizer's ops carry its own prefix (a GAN has two)

def check_elementwise(optimizer, stage):
    if not isinstance(optimizer, _ELEMENTWISE):
        raise ValueError("DistributedOptimizer(zero_stage=%d) shards the optimizer's state element by element, which "
                         "needs an optimizer whose step is elementwise (%s); %s's is not"
                         % (stage, ", ".join(c.__name__ for c in _ELEMENTWISE), type(optimizer).__name__))


class _ZeroOptimizer:
    """Mixed into the user's optimizer class (see DistributedOptimizer): param_groups are the user's, for
    schedulers and hyperparameters; the state is the inner optimizer's, over this rank's shards."""

    def __init__(self, params, named_parameters, stage, compression, backward_passes_per_step, op,
                 gradient_predivide_factor, process_set, bucket_bytes):
        self._zero_wrapping = True
        super(self.__class__, self).__init__(params)
        self._zero_wrapping = False
        if op not in (mpi_ops.Average, mpi_ops.Sum):
            raise ValueError("DistributedOptimizer(zero_stage=%d) reduces with Average or Sum" % stage)
        scaling.check_predivide(op, gradient_predivide_factor)
        self._stage = stage
        self._prefix = "zero%d." % next(_instances)
        self._process_set = process_set
        self._compression = compression
        self._op = op
        self._predivide = gradient_predivide_factor
        self._passes = backward_passes_per_step
        all_params = [p for group in self.param_groups for p in group["params"]]
        self._names = parameter_names(all_params, named_parameters)
        self._parameter_names = self._names  # Horovod's name for it
        rank, size = self._place()
        if self._reducing:
            self._check_same_parameters_everywhere(all_params)
        self._buckets = make_buckets(self.param_groups, rank, size, bucket_bytes)
        self._bucket_of = {p: b for b in self._buckets for p in b.params}
        self._flatten()
        self._make_masters()
        self._inner = self._make_inner()
        self._handles = {}   # bucket index -> (handle, its flat gradients, the tensor sent, compression's ctx)
        self._grad_shards = {}  # stage 2: bucket index -> this rank's reduced shard of its gradients
        self._restart_accumulation()
        # Stage 2's packing buffer: one per dtype, reused step after step (a fresh one would cost its page
        # faults each time); a bucket waits for the reduce-scatter of the one packed before it.
        self._packs = {}        # dtype -> the buffer
        self._packed = {}       # dtype -> the bucket last packed into it
        self._most = {}         # dtype -> the largest bucket's elements
        for b in self._buckets:
            self._most[b.flat.dtype] = max(self._most.get(b.flat.dtype, 0), b.numel)
        self._synchronized = False
        self._should_synchronize = True
        self._consolidated = None
        # join(): each round of reductions also counts the ranks still training; while some have joined,
        # those still training tell them what comes next, and the joined ones mirror it (_zero_join.py).
        self._joined = False
        self._training = None        # the round's count, in flight
        self._others_joined = False  # as of the last round
        self._untold = False         # a round reduced, what followed it not yet told
        self._hook_refs = register_accumulate_hooks(self, list(self._bucket_of), _ZeroOptimizer._on_gradient)
        _join.sharded_optimizers.add(self)

    # ---- layout ------------------------------------------------------------------------------------

    def _place(self):
        """(rank, size) of the ranks the shards are cut for. Ranks outside the process set step on their own
        gradients, as in Horovod: all of it is their shard."""
        self._reducing = bool(self._process_set.included()) and _process_sets.set_size(self._process_set) > 1
        if not self._reducing:
            return 0, 1
        return _process_sets.set_rank(self._process_set), _process_sets.set_size(self._process_set)

    def _check_same_parameters_everywhere(self, all_params):
        mine = [(self._names[p], tuple(p.shape), str(p.dtype), p.requires_grad) for p in all_params]
        everyone = functions.allgather_object(mine, name=self._prefix + "parameters", process_set=self._process_set)
        for i, theirs in enumerate(everyone):
            if theirs != everyone[0]:
                first = next((a, b) for a, b in itertools.zip_longest(everyone[0], theirs) if a != b)
                raise ValueError("DistributedOptimizer(zero_stage=%d): rank %d of the process set wraps other "
                                 "parameters than its rank 0 (rank 0 has %s, rank %d has %s): every rank must wrap "
                                 "the same model's parameters, in the same order"
                                 % (self._stage, i, first[0], i, first[1]))

    def _flatten(self):
        """Each bucket's parameters become views of one flat buffer."""
        for b in self._buckets:
            dtype, device = b.params[0].dtype, b.params[0].device
            flat = torch.empty(b.numel, dtype=dtype, device=device)
            with torch.no_grad():
                for p, offset in zip(b.params, b.offsets):
                    flat[offset:offset + p.numel()].copy_(p.reshape(-1))
                    p.data = flat[offset:offset + p.numel()].view_as(p)
            b.flat = flat

    def _make_masters(self):
        """What the inner optimizer steps for each bucket: its shard of the parameters, or a float32 copy of
        a 16-bit one."""
        self._masters = {}
        with torch.no_grad():
            for b in self._buckets:
                shard = b.flat[b.start:b.start + b.count]
                self._masters[b.index] = shard.float() if shard.dtype in (torch.float16, torch.bfloat16) else shard
                b.version = b.flat._version

    def _reshard(self):
        """Elastic training in place: the shards cut again for the ranks there are now, the optimizer's state
        empty until load_state_dict() gives it (kolo.torch.elastic.TorchState's commits hold it whole)."""
        self._abandon_in_flight()
        rank, size = self._place()
        for b in self._buckets:
            b.place(rank, size)
        self._make_masters()
        self._inner = self._make_inner()

    def _abandon_in_flight(self):
        """After a failed step (a peer lost), forgets the step's reductions, waiting for each so none is
        left in the engine, and what they gave: the state is being restored to a commit."""
        for index in list(self._handles):
            try:
                _zero_reduction.finish(self, index)
            except Exception:  # noqa: BLE001 - the failure is what is being recovered from
                pass
        try:
            _zero_join.end_round(self)
        except Exception:  # noqa: BLE001
            pass
        self._untold = self._others_joined = False
        self._grad_shards.clear()
        self._restart_accumulation()
        self._synchronized = False

    def _restart_accumulation(self):
        """Every bucket waits for backward_passes_per_step gradients of each of its parameters again."""
        self._waiting = {b.index: set(b.params) for b in self._buckets}
        self._delay = {p: self._passes for p in self._bucket_of}

    def _make_inner(self):
        groups = []
        for g, group in enumerate(self.param_groups):
            inner = hyperparameters(group)
            inner["params"] = [self._masters[b.index] for b in self._buckets if b.group == g and b.count > 0]
            groups.append(inner)
        if not any(group["params"] for group in groups):
            return None  # more ranks than elements: nothing to step here
        return type(self).__mro__[1](groups)  # the user's optimizer class, over this rank's shards

    def __del__(self):
        remove_accumulate_hooks(getattr(self, "_hook_refs", ()))

    def add_param_group(self, param_group):
        if getattr(self, "_zero_wrapping", False):
            return super(self.__class__, self).add_param_group(param_group)
        raise ValueError("DistributedOptimizer(zero_stage=%d): a parameter group added after wrapping is not sharded; "
                         "add every group to the optimizer before wrapping it" % self._stage)

    # ---- gradients ---------------------------------------------------------------------------------

    def _on_gradient(self, p):
        if not self._reducing:  # one rank left (elastic in place): nothing to reduce
            return
        b = self._bucket_of[p]
        if not self._waiting[b.index] and self._delay[p] <= 0:  # launched already
            raise AssertionError(
                "Gradients were computed more than backward_passes_per_step times before step() or "
                "synchronize(). Raise backward_passes_per_step to accumulate gradients locally.")
        self._delay[p] -= 1
        if self._delay[p] == 0:
            self._waiting[b.index].discard(p)
            if not self._waiting[b.index]:
                _zero_reduction.launch(self, b)

    def synchronize(self):
        """Waits for every bucket's reduction (starting those backward did not complete, so that every
        rank submits the same names). Stage 1 writes the averaged gradients into the parameters' .grad;
        stage 2 keeps this rank's shard of them (the parameters' .grad stay None)."""
        if not self._reducing:
            self._synchronized = True
            return
        for b in self._buckets:
            if self._waiting[b.index]:
                _zero_reduction.launch(self, b)
        error = None
        for index in list(self._handles):
            try:
                _zero_reduction.finish(self, index)
            except Exception as e:  # wait for every bucket before raising, so none is left in flight
                error = error or e
        try:
            _zero_join.end_round(self)
        except Exception as e:  # noqa: BLE001
            error = error or e
        self._restart_accumulation()
        self._synchronized = error is None
        if error is not None:
            self._grad_shards.clear()
            raise error

    def skip_synchronize(self):
        """For step() after an explicit synchronize() (to clip gradients in between, say)."""
        return skipping_synchronize(self)

    def _join_steps(self):
        """kolo.torch.join() on this rank (_zero_join.py)."""
        _zero_join.join_steps(self)

    def _shard_grad(self, b):
        if self._stage == 2 and self._reducing:
            if b.index not in self._grad_shards:
                raise RuntimeError("step() inside skip_synchronize() without synchronize() first")
            return self._grad_shards.pop(b.index)
        if self._stage == 1 and b.grad_flat is not None and all(
                p.grad is not None and p.grad.data_ptr() == b.grad_flat[offset:].data_ptr()
                for p, offset in zip(b.params, b.offsets)):
            return b.grad_flat[b.start:b.start + b.count]  # the gradients are still views of it
        pieces = []
        for p, start, _, length in b.pieces():
            g = p.grad
            pieces.append(g.reshape(-1)[start:start + length] if g is not None else
                          torch.zeros(length, dtype=p.dtype, device=p.device))
        return torch.cat(pieces) if pieces else torch.zeros(0, dtype=b.flat.dtype, device=b.flat.device)

    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """torch.nn.utils.clip_grad_norm_ for a sharded optimizer, after synchronize(): the norm of the
        whole job's averaged gradients (each rank holds only its shard's at stage 2), every gradient
        scaled by max_norm / norm where the norm exceeds it. Returns the norm."""
        if self._handles or not self._synchronized:
            raise RuntimeError("clip_grad_norm_: call optimizer.synchronize() first, then step() inside "
                               "optimizer.skip_synchronize()")
        norm_type = float(norm_type)
        if self._others_joined and not self._joined:
            _zero_join.tell(self, _zero_join.CLIP, float(max_norm), norm_type)
        shards = {b.index: self._shard_grad(b).float() for b in self._buckets}
        if self._stage == 2:
            self._grad_shards = shards
        if norm_type == float("inf"):
            local = max([s.abs().max() for s in shards.values() if s.numel()] or [torch.tensor(0.0)])
            op = mpi_ops.Max
        else:
            local = sum([(s.abs() ** norm_type).sum() for s in shards.values()], torch.tensor(0.0))
            op = mpi_ops.Sum
        total = local.reshape(1).double()
        if self._reducing:
            total = mpi_ops.allreduce(total, name=self._prefix + "grad_norm", op=op, process_set=self._process_set)
        norm = total[0] if norm_type == float("inf") else total[0] ** (1.0 / norm_type)
        scale = max_norm / (float(norm) + 1e-6)
        if scale < 1:
            if self._stage == 2 and self._reducing:
                for s in shards.values():
                    s.mul_(scale)
            else:  # the shards are taken from the gradients again in step()
                for b in self._buckets:
                    for p in b.params:
                        if p.grad is not None:
                            p.grad.mul_(scale)
                self._grad_shards = {}
        return norm.float()

    # ---- the step ----------------------------------------------------------------------------------

    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        synchronize_for_step(self)
        self._check_groups_unchanged()
        if self._others_joined and not self._joined:
            _zero_join.tell(self, _zero_join.STEP)
        with torch.no_grad():
            self._refresh_masters()
            for b in self._buckets:
                master = self._masters[b.index]
                grad = self._shard_grad(b)
                master.grad = grad.to(master.dtype) if b.count > 0 else None
            if self._inner is not None:
                self._synchyperparameters()
                self._inner.step()
            for master in self._masters.values():
                master.grad = None
            self._gather_parameters()
        return loss

    def _synchyperparameters(self):
        """The wrapper's groups (what schedulers change) into the inner optimizer's."""
        for group, inner in zip(self.param_groups, self._inner.param_groups):
            inner.update(hyperparameters(group))

    def _shard_state(self, b):
        """The inner optimizer's state for bucket b's shard ({} where this rank holds none of it)."""
        return self._inner.state.get(self._masters[b.index], {}) if self._inner is not None else {}

    def _refresh_masters(self):
        """A 16-bit bucket's float32 master, from its parameters where something else wrote into them."""
        for b in self._buckets:
            master = self._masters[b.index]
            if master.dtype != b.flat.dtype and b.flat._version != b.version:
                master.copy_(b.flat[b.start:b.start + b.count])
                b.version = b.flat._version

    def _gather_parameters(self):
        """Every rank's updated shards into every rank's parameters."""
        for b in self._buckets:
            master = self._masters[b.index]
            if master.dtype != b.flat.dtype:
                b.flat[b.start:b.start + b.count].copy_(master)
        if self._reducing:
            # Into the buckets' own buffers, each rank's shard already in its place there.
            handles = [_allgather_into_async(b.flat[b.start:b.start + b.count], b.flat, self._prefix + "param.%d" % b.index,
                                             self._process_set) for b in self._buckets]
            for handle in handles:
                mpi_ops.synchronize(handle)
        for b in self._buckets:
            b.version = b.flat._version

    def _check_groups_unchanged(self):
        params = [p for group in self.param_groups for p in group["params"] if p.requires_grad]
        if len(params) != len(self._bucket_of) or any(p not in self._bucket_of for p in params):
            raise ValueError("DistributedOptimizer(zero_stage=%d): the optimizer's parameters changed after wrapping "
                             "(a parameter added, removed, or made trainable); wrap it again" % self._stage)

    def zero_grad(self, *args, **kwargs):
        if self._handles:
            raise AssertionError("optimizer.zero_grad() was called after loss.backward() but before optimizer.step() "
                                 "or optimizer.synchronize(); the gradients' reductions are still in flight.")
        self._grad_shards.clear()
        return super(self.__class__, self).zero_grad(*args, **kwargs)

    # ---- checkpoints (_zero_checkpoint.py) ------------------------------------------------------------

    def consolidate_state_dict(self, to=0):
        """Collective over the process set: gathers every rank's shard of the state into rank `to`'s
        (None: every rank's) state_dict(), in the unsharded optimizer's format, which any optimizer of the
        same class over the same parameters loads (sharded or not, at any number of ranks)."""
        _zero_checkpoint.consolidate(self, to)

    def state_dict(self):
        if self._consolidated is None:
            raise RuntimeError("DistributedOptimizer(zero_stage=%d) holds only this rank's shard of the state: call "
                               "optimizer.consolidate_state_dict(to=rank) on every rank first; state_dict() then "
                               "returns the whole state on that rank" % self._stage)
        full, self._consolidated = self._consolidated, None
        return full

    def load_state_dict(self, state_dict):
        """Loads a state in the unsharded optimizer's format (consolidate_state_dict's, or an unsharded
        optimizer's) into this rank's shards, whatever the number of ranks that saved it. Local: every rank
        loads the same dict."""
        _zero_checkpoint.load(self, state_dict)

    def _broadcast_state(self, root_rank):
        """broadcast_optimizer_state for a sharded optimizer: root's view of the job's state (consolidated
        there) loaded by every rank."""
        self.consolidate_state_dict(to=root_rank)
        full = self.state_dict() if _process_sets.set_rank(self._process_set) == root_rank else None
        self.load_state_dict(functions.broadcast_state_dict(full, root_rank, self._process_set))
