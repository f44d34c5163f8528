"""Horovod's elastic API for PyTorch (``hvd.elastic``): run, TorchState, ElasticSampler. See
kolo.elastic for how a job survives a failure and takes new hosts."""
import copy
import io
import math
import random

import torch

from kolo.elastic import HostsUpdatedInterrupt, ObjectState, PeersFailedError, State, run_fn  # noqa: F401 (Horovod's names)
from kolo.torch import functions, mpi_ops


def run(func):
    """Decorates a training function whose first argument is a State: it starts from the state every
    rank agrees on and, on an elastic kolorun, goes on from the last commit after a failure."""
    return run_fn(func)


class ElasticSampler(torch.utils.data.Sampler):
    """Partitions a dataset over the ranks and, after a reset, what is left of the epoch over the ranks
    there are then. Call `record_batch(batch_idx, batch_size)` after each batch and `set_epoch(epoch)`
    at the end of an epoch; keep the sampler in the TorchState.

    As Horovod's (and torch's DistributedSampler): every rank gets ceil(left / size) samples, the
    last round padded from the start of what is left when the size does not divide it."""

    def __init__(self, dataset, shuffle=True, seed=0):
        self.dataset = dataset
        self.shuffle = shuffle
        self.seed = seed
        self.epoch = 0
        self.processed_num = 0
        self.reset()

    def set_epoch(self, epoch):
        self.epoch = epoch
        self.processed_num = 0
        self.reset()

    def record_batch(self, batch_idx, batch_size):
        self.processed_num += batch_size * self.num_replicas

    def state_dict(self):
        return {"epoch": self.epoch, "processed_num": self.processed_num}

    def load_state_dict(self, state_dict):
        self.epoch = state_dict["epoch"]
        self.processed_num = state_dict["processed_num"]
        self.reset()

    def reset(self):
        self.num_replicas, self.rank = self._place()
        order = list(range(len(self.dataset)))
        if self.shuffle:
            random.Random(self.seed + self.epoch).shuffle(order)
        # The rank-strided shares of a prefix are that prefix: what was processed is order[:processed_num].
        self.remaining_indices = order[self.processed_num:]
        self.num_samples = int(math.ceil(len(self.remaining_indices) / self.num_replicas))
        self.total_size = self.num_samples * self.num_replicas

    def _place(self):
        return mpi_ops.size(), mpi_ops.rank()

    def __iter__(self):
        indices = self.remaining_indices[:]
        indices += indices[:self.total_size - len(indices)]
        return iter(indices[self.rank:self.total_size:self.num_replicas])

    def __len__(self):
        return self.num_samples


class TorchState(ObjectState):
    """A model, an optimizer and anything else (epoch=0, batch=0, sampler=ElasticSampler(...)): saved by
    commit(), restored after a failure, synced from one rank before training goes on. A DistributedDataParallel
    on the kolo backend is made again on torch's new default group after a recovery in place."""

    def __init__(self, model=None, optimizer=None, **kwargs):
        handlers, plain = {}, {}
        for name, value in dict(kwargs, model=model, optimizer=optimizer).items():
            handler = _handler_for(value)
            if handler is not None:
                handlers[name] = handler
            elif name not in ("model", "optimizer"):
                plain[name] = value
        self._handlers = handlers
        for name, handler in handlers.items():
            object.__setattr__(self, name, handler.value)
        super().__init__(bcast_object=functions.broadcast_object, get_rank=mpi_ops.rank, **plain)

    def __setattr__(self, name, value):
        handlers = self.__dict__.get("_handlers")
        if handlers is not None and name in handlers:
            handlers[name].value = value
        object.__setattr__(self, name, value)

    def save(self):
        # Every handler's snapshot first, kept only once all are taken: a sharded optimizer's is collective,
        # and a peer lost in it must leave this rank's commit as it was, not half of it newer.
        snapshots = {name: handler.snapshot() for name, handler in self._handlers.items()}
        for name, handler in self._handlers.items():
            handler.saved = snapshots[name]
        super().save()

    def restore(self):
        for handler in self._handlers.values():
            handler.restore()
        super().restore()

    def sync(self):
        # Saved again afterwards, so that restore() after a sync gives the synced state (as TensorFlow's).
        for name, handler in sorted(self._handlers.items()):
            handler.sync_and_save(name, self.sync_root_rank)
        super().sync()

    def serialize(self, file):
        attrs = io.BytesIO()
        super().serialize(attrs)
        torch.save({"handlers": {n: h.saved for n, h in self._handlers.items()}, "attrs": attrs.getvalue()}, file)

    def deserialize(self, payload):
        data = torch.load(io.BytesIO(payload))
        for name, saved in data["handlers"].items():
            self._handlers[name].saved = saved
            self._handlers[name].restore()
        super().deserialize(data["attrs"])


def _handler_for(value):
    if isinstance(value, torch.nn.parallel.DistributedDataParallel):
        return _DDPHandler(value)
    if isinstance(value, torch.nn.Module):
        return _ModuleHandler(value)
    if isinstance(value, torch.optim.Optimizer):
        return _ShardedOptimizerHandler(value) if hasattr(value, "_reshard") else _OptimizerHandler(value)
    if isinstance(value, ElasticSampler):
        return _SamplerHandler(value)
    return None


class _Handler:
    def __init__(self, value):
        self.value = value
        self.saved = None
        self.save()

    def snapshot(self):
        return copy.deepcopy(self.value.state_dict())

    def save(self):
        self.saved = self.snapshot()

    def restore(self):
        self.value.load_state_dict(self.saved)

    def sync_and_save(self, name, root):
        self.sync(name, root)
        self.save()


class _ModuleHandler(_Handler):
    def sync(self, name, root):
        functions.broadcast_parameters(self.value.state_dict(), root_rank=root)


class _DDPHandler(_ModuleHandler):
    """A DistributedDataParallel model on the kolo backend: after the world changed in place, made again on torch's
    new default group (its reducer held the old world's), before the commit is restored into it."""

    def restore(self):
        from kolo.torch.backend._new_world import remake_ddp
        remake_ddp(self.value)
        super().restore()


class _OptimizerHandler(_Handler):
    def restore(self):
        # A DistributedOptimizer may hold the failed step's allreduces (backward raised in a hook).
        abandon = getattr(self.value, "_abandon_in_flight", None)
        if abandon is not None:
            abandon()
        super().restore()

    def sync(self, name, root):
        functions.broadcast_optimizer_state(self.value, root_rank=root)


class _SamplerHandler(_Handler):
    def sync(self, name, root):
        # The root's place in the epoch, re-partitioned over the ranks there are now.
        self.value.load_state_dict(functions.broadcast_object(self.value.state_dict(), root, name="sampler." + name))


class _ShardedOptimizerHandler(_Handler):
    """DistributedOptimizer(zero_stage=1|2): each rank holds only its shard of the state, and a lost rank's
    shard goes with it. So a commit holds the whole state, gathered on every rank into host memory (the
    unsharded optimizer's format), and restore() cuts it into the shards of the ranks left, however many."""

    def __init__(self, value):
        if value._process_set.process_set_id != mpi_ops.global_process_set.process_set_id:
            raise ValueError("kolo.torch.elastic.TorchState takes a sharded optimizer over every rank only: a "
                             "process set does not outlive a lost rank")
        self.restored = False  # by restore(): this rank's state is the commit's, which sync() then spreads
        super().__init__(value)

    def snapshot(self):
        self.value.consolidate_state_dict(to=None)
        return _on_the_host(self.value.state_dict())

    def restore(self):
        self.value._reshard()
        self.value.load_state_dict(self.saved)
        self.restored = True

    def sync(self, name, root):
        if functions.broadcast_object(self.restored, root, name="elastic.restored." + name):
            # Root's commit (after a failure, or a restarted job's commit kept on root's host), cut anew.
            self.saved = functions.broadcast_state_dict(self.saved if mpi_ops.rank() == root else None, root)
            self.value._reshard()
            self.value.load_state_dict(self.saved)
        else:
            functions.broadcast_optimizer_state(self.value, root_rank=root)
            self.save()
        self.restored = False

    def sync_and_save(self, name, root):
        self.sync(name, root)


def _on_the_host(state_dict):
    state_dict["state"] = {i: {k: v.cpu() if torch.is_tensor(v) else v for k, v in entry.items()}
                           for i, entry in state_dict["state"].items()}
    return state_dict
