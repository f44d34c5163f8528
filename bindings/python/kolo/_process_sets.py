"""Process sets with Horovod's names, shared by every binding.

A ProcessSet is a subset of the job's ranks with an engine and communicators of its own; collectives
take it as ``process_set=`` and run among its members only. Registering (add_process_set, or
init(process_sets=[...])) and removing are collective over the whole job: every rank makes the same
calls in the same order. Ranks are job ranks throughout (a broadcast's root too).

kolo's engine keeps the registry (its ids, kolo._C.process_set_ids()); Python keeps none that could
disagree with it. A ProcessSet holds the id it was given and the engine's lifetime it was given in: after
shutdown (or recovery in place) the engine's sets are gone, and so is the id's meaning.
"""
from kolo._abi import OK, _C
from kolo._errors import error_for


class ProcessSet:
    """The ranks of a process set: a list of job ranks, or an mpi4py communicator (its ranks in
    COMM_WORLD). size(), rank() and included() answer None until the set is registered."""

    def __init__(self, ranks_or_comm):
        self.mpi_comm = None
        self._id = None
        self._lifetime = None
        if hasattr(ranks_or_comm, "Get_group"):  # an mpi4py communicator
            from mpi4py import MPI
            self.mpi_comm = ranks_or_comm
            group = ranks_or_comm.Get_group()
            self.ranks = sorted(MPI.Group.Translate_ranks(group, list(range(group.Get_size())),
                                                          MPI.COMM_WORLD.Get_group()))
        else:
            self.ranks = sorted(int(r) for r in ranks_or_comm)

    @property
    def process_set_id(self):
        """The engine's id for the set; None before registration, after removal or after shutdown."""
        return self._id if self._lifetime == _lifetime[0] else None

    @process_set_id.setter
    def process_set_id(self, set_id):
        self._id, self._lifetime = set_id, _lifetime[0]

    def _invalidate(self):
        self.process_set_id = None

    def _members(self):
        if self.process_set_id is None:
            return None
        code, message, ranks, rank = _C.process_set_ranks(self.process_set_id)
        if code != OK:
            raise error_for(code, message)
        return ranks, rank

    def size(self):
        """How many ranks the set has; None before it is registered."""
        members = self._members()
        return None if members is None else len(members[0])

    def rank(self):
        """This rank's place in the set (0-based); -1 when not a member; None before registration."""
        members = self._members()
        return None if members is None else members[1]

    def included(self):
        """Whether this rank is a member; None before registration."""
        members = self._members()
        return None if members is None else members[1] >= 0

    def __eq__(self, other):
        return isinstance(other, ProcessSet) and self.ranks == other.ranks and \
            self.process_set_id == other.process_set_id

    def __hash__(self):
        return hash((tuple(self.ranks), self.process_set_id))

    def __repr__(self):
        return "ProcessSet(process_set_id=%s, ranks=%s, mpi_comm=%s)" % (self.process_set_id, self.ranks, self.mpi_comm)


class _GlobalProcessSet(ProcessSet):
    """Every rank of the job (id 0); its ranks are known once kolo is initialized."""

    def __init__(self):
        super().__init__([])

    @property
    def process_set_id(self):
        return 0  # the global set lives as long as kolo

    def _invalidate(self):
        pass

    @property
    def ranks(self):
        return list(range(_C.size())) if _C.is_initialized() else []

    @ranks.setter
    def ranks(self, value):
        pass


# Which of the engine's lifetimes (init to shutdown) this is: a set's id means something only in the
# lifetime it was registered in. A count, not a registry: the engine's ids are the one registry.
_lifetime = [0]

global_process_set = _GlobalProcessSet()


def add_process_set(process_set):
    """Registers a set of ranks (a ProcessSet, a list of ranks, or an mpi4py communicator) on every
    rank; every rank must call it with the same ranks. Returns the registered ProcessSet."""
    ps = process_set if isinstance(process_set, ProcessSet) else ProcessSet(process_set)
    if ps.process_set_id is not None:
        raise ValueError("%r is registered already" % (ps,))
    code, message, set_id = _C.add_process_set(ps.ranks)
    if code != OK:
        raise error_for(code, message)
    ps.process_set_id = set_id
    return ps


def remove_process_set(process_set):
    """Removes a registered set on every rank (collective); it is then invalid. Returns False when
    the set was not registered; raises when ops of the set are still in flight."""
    if process_set.process_set_id == 0:
        raise ValueError("the global process set cannot be removed")
    if process_set.process_set_id is None or process_set.process_set_id not in _C.process_set_ids():
        return False
    code, message = _C.remove_process_set(process_set.process_set_id)
    if code != OK:
        raise error_for(code, message)
    process_set._invalidate()
    return True


def register_at_init(process_sets):
    """init(process_sets=...): a list of sets (or rank lists) to register now; "dynamic" (Horovod's
    switch for adding sets later) is accepted and changes nothing, as kolo always allows that."""
    if process_sets is None or process_sets == "dynamic":
        return []
    added = []
    try:
        for ps in process_sets:
            added.append(add_process_set(ps))
    except Exception:
        # A refused list leaves none of its sets, or the next init's good list would be refused too. Every
        # rank has the same list and refuses the same set, so every rank removes the same ones.
        for ps in reversed(added):
            remove_process_set(ps)
        raise
    return added


def forget_all():
    """At shutdown: every registered set becomes invalid, as its engine is gone."""
    _lifetime[0] += 1


def set_id(process_set, what="this op", *what_args):
    """The id a collective passes to kolo for `process_set` (None or a ProcessSet). `what % what_args`
    names the call in an error, formatted only then (this is on every op's path)."""
    if process_set is None:
        return 0
    if not isinstance(process_set, ProcessSet):
        raise TypeError("process_set: expected a kolo ProcessSet, got %s" % type(process_set).__name__)
    if process_set.process_set_id is None:
        raise ValueError("%s: %r is not registered (add_process_set registers it, on every rank)"
                         % (what % what_args if what_args else what, process_set))
    return process_set.process_set_id


def set_size(process_set):
    return _C.size() if process_set is None or process_set.process_set_id == 0 else process_set.size()


def set_rank(process_set):
    """This rank's place in the set (a member's: ops run only on members)."""
    return _C.rank() if process_set is None or process_set.process_set_id == 0 else process_set.rank()

