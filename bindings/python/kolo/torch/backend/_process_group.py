"""kolo as a torch.distributed ProcessGroup: torch's collectives on kolo's engine, one group per kolo process set.

A Python ProcessGroup (torch calls it from Python, and DDP's reducer from C++ through torch's trampoline), with
nothing compiled against torch: it survives torch's releases as kolo.torch does.
"""
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d

from kolo import _lifecycle
from kolo._abi import INVALID_ARGUMENT, _C
from kolo._errors import KoloValueError
from kolo._process_sets import ProcessSet, add_process_set, global_process_set
from kolo.torch.backend import _movements, _reductions
from kolo.torch.backend._names import OpNames


class KoloProcessGroup(dist.ProcessGroup):
    def __init__(self, rank, size, process_set, job_ranks):
        super().__init__(rank, size)
        self.process_set = process_set
        self._job_ranks = job_ranks
        # The world it was made in: after an in-place recovery its rank and size (torch's, fixed) are wrong.
        self.world, self.whole_world = _lifecycle.world_number(), len(job_ranks) == _C.size()
        self._sets = {}  # new_group's kolo sets, by ranks (two groups of the same ranks share one)
        self._name, self._desc = "", ""
        self.names = OpNames(self)

    def getBackendName(self):
        return "kolo"

    # torch keeps a group's name and description on its backends, which a Python group has none of.
    def _set_group_name(self, name):
        self._name = name

    def _set_group_desc(self, desc):
        self._desc = desc

    @property
    def group_name(self):
        return self._name

    @property
    def group_desc(self):
        return self._desc

    def job_rank(self, group_rank, collective):
        if not 0 <= group_rank < len(self._job_ranks):
            raise KoloValueError("%s on rank %d: root %d is not a rank of this group of %d"
                                 % (collective, _C.rank(), group_rank, len(self._job_ranks)), INVALID_ARGUMENT)
        return self._job_ranks[group_rank]

    def job_ranks(self):
        return list(self._job_ranks)

    def of_an_older_world(self):
        """Whether kolo's world has changed in place (kolo.elastic's recovery) since this group was made: its ranks
        are then the old world's."""
        return self.world != _lifecycle._world

    def check_world(self):
        """Every op's first step: a group of an older world refuses the op."""
        if self.of_an_older_world():
            self._refuse_stale()

    def _refuse_stale(self):
        raise KoloValueError(
            "torch group '%s' on rank %d: made as rank %d of %d in a world that a lost peer has changed in place; kolo's "
            "world is now %d ranks, this one rank %d. kolo.elastic re-makes torch's default group, and the "
            "DistributedDataParallel models in a kolo.torch.elastic.TorchState; make others (groups of some ranks, "
            "FSDP, ZeroRedundancyOptimizer) again after the recovery, in a reset callback"
            % (self._name, _C.rank(), self.rank(), self.size(), _C.size(), _C.rank()), INVALID_ARGUMENT)

    # ---- groups -----------------------------------------------------------------------------------
    def new_group(self, ranks, timeout=None, backend=None, pg_options=None, group_name=None, group_desc=None):
        """torch's new_group, on every rank: a kolo process set of those ranks (None where this rank is not one)."""
        if backend is not None and str(backend).lower() not in ("kolo", "undefined"):
            # torch 2.13 and later hand every new_group to the default group's, whatever its backend.
            raise KoloValueError("new_group(backend=%r) on rank %d: with kolo as the default group's backend, torch "
                                 "lets kolo make every group, and kolo makes kolo groups only: make the default "
                                 "group with %r and kolo's with dist.new_group(backend='kolo')"
                                 % (str(backend), _C.rank(), str(backend)), INVALID_ARGUMENT)
        ranks = sorted(int(r) for r in (range(_C.size()) if ranks is None else ranks))
        if ranks == list(range(_C.size())):
            process_set = global_process_set
        else:
            key = tuple(ranks)
            if key not in self._sets:
                self._sets[key] = add_process_set(ProcessSet(ranks))
            process_set = self._sets[key]
        if _C.rank() not in ranks:
            return None
        group = KoloProcessGroup(ranks.index(_C.rank()), len(ranks), process_set, ranks)
        group._sets = self._sets
        group._name, group._desc = group_name or "", group_desc or ""
        return group

    def shutdown(self):
        """destroy_process_group: kolo itself goes on (kolo.torch may still use it); kolo.shutdown() ends it."""

    def abort(self):
        self.shutdown()

    # ---- reductions -------------------------------------------------------------------------------
    def allreduce(self, tensors, opts=None):
        return _reductions.allreduce(self, _list(tensors), _options(opts, c10d.AllreduceOptions))

    def allreduce_coalesced(self, tensors, opts=None):
        return _reductions.allreduce_coalesced(self, tensors, _options(opts, c10d.AllreduceCoalescedOptions))

    def reduce(self, tensors, opts=None):
        return _reductions.reduce(self, _list(tensors), _options(opts, c10d.ReduceOptions))

    def reduce_scatter(self, outputs, input_lists, opts=None):
        return _reductions.reduce_scatter(self, outputs, input_lists, _options(opts, c10d.ReduceScatterOptions))

    def reduce_scatter_single(self, output, input, opts=None):
        return _reductions.reduce_scatter_single(self, output, input, _options(opts, c10d.ReduceScatterOptions))

    _reduce_scatter_base = reduce_scatter_single  # torch before 2.15

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        return _reductions.reduce_scatter_coalesced(self, outputs, inputs, _options(opts, c10d.ReduceScatterOptions))

    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    # ---- movements --------------------------------------------------------------------------------
    def broadcast(self, tensors, opts=None):
        return _movements.broadcast(self, _list(tensors), _options(opts, c10d.BroadcastOptions))

    def allgather(self, output_lists, inputs, opts=None):
        return _movements.allgather(self, output_lists, _list(inputs), _options(opts, c10d.AllgatherOptions))

    def allgather_coalesced(self, output_lists, inputs, opts=None):
        return _movements.allgather_coalesced(self, output_lists, inputs, _options(opts, c10d.AllgatherOptions))

    def all_gather_single(self, output, input, opts=None):
        return _movements.all_gather_single(self, output, input, _options(opts, c10d.AllgatherOptions))

    _allgather_base = all_gather_single  # torch before 2.15

    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        return _movements.all_gather_single_coalesced(self, outputs, inputs, _options(opts, c10d.AllgatherOptions))

    allgather_into_tensor_coalesced = all_gather_single_coalesced

    def gather(self, output_lists, inputs, opts=None):
        return _movements.gather(self, output_lists, _list(inputs), _options(opts, c10d.GatherOptions))

    def gather_single(self, output, input, opts=None):
        return _movements.gather_single(self, output, input, _options(opts, c10d.GatherOptions))

    def scatter(self, outputs, input_lists, opts=None):
        return _movements.scatter(self, _list(outputs), input_lists, _options(opts, c10d.ScatterOptions))

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        return _movements.all_to_all_single(self, output, input, output_split_sizes, input_split_sizes,
                                            _options(opts, c10d.AllToAllOptions))

    alltoall_base = all_to_all_single  # torch before 2.15, and its C++ callers

    def alltoall(self, outputs, inputs, opts=None):
        return _movements.all_to_all(self, outputs, inputs, _options(opts, c10d.AllToAllOptions))

    def barrier(self, opts=None):
        return _movements.barrier(self, _options(opts, c10d.BarrierOptions))

    # ---- what kolo does not do --------------------------------------------------------------------
    def send(self, tensors, dst, tag=0):
        raise _no_point_to_point("send")

    def recv(self, tensors, src, tag=0):
        raise _no_point_to_point("recv")

    def recv_anysource(self, tensors, tag=0):
        raise _no_point_to_point("recv")


def _no_point_to_point(what):
    return KoloValueError("%s on rank %d: the kolo backend has collectives only, no point-to-point ops (send, recv, "
                          "isend, irecv, batch_isend_irecv): make the default group gloo's or nccl's for them, and kolo's "
                          "group with dist.new_group(backend='kolo')" % (what, _C.rank()), INVALID_ARGUMENT)


def _list(tensors):
    return tensors if isinstance(tensors, (list, tuple)) else [tensors]


def _options(opts, kind):
    return opts if opts is not None else kind()
