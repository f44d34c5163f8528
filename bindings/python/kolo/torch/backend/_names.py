"""Names for a group's ops, by their place in the group's sequence of ops.

kolo negotiates an op by name, and an op whose name recurs with the same tensor, dtype and reduction is agreed
from its cached response (a bit per rank, and a small allreduce rides along) instead of a gather to rank 0 and
a broadcast, which in the Gloo world is a round over TCP. torch's ops have no names; every rank issues a group's
ops in the same order, so the place in that order is a name every rank agrees on, whatever the tensors are: a
rank whose tensor differs in shape or dtype still submits the same name, and the negotiation fails on every rank
naming the difference (a name made from the shape would differ, and the ranks would wait for each other).

Names recur every SLOTS ops, so a loop that issues the same ops each step (DDP's buckets, FSDP's gathers and
reductions, a metric) finds them cached once its period divides SLOTS. Any other period (9 DDP buckets, say; the
gathers and reductions of FSDP over a deep model, hundreds of ops) is found: every rank notes the shapes of the ops
before a check (at op FIRST_CHECK, then every CHECK_EVERY ops), finds their period, and the ranks compare theirs with
a small allreduce at that same op; where they all found the same one, the names from that op on recur every
multiple of the names a period takes (a coalesced op takes one per tensor) that fits in SLOTS. A rank whose ops
differ finds another period or none, and nothing changes. A check that finds none while a period is in force (an
evaluation's few ops within its window, say) keeps it, and the next check comes one window later: a second check
without it ends it, and one that finds a new one switches. A slot's name is free again only once its last op has
ended on this rank: taking it waits.
"""
import threading

import torch

from kolo.torch._allreduce import allreduce_
from kolo.torch._reduce_ops import Max

# Divisible by every period of 1 to 7 ops (and 10, 12, 14, 15, 20, 21, 28, 30, 35...), within kolo's response cache
# (KOLO_CACHE_CAPACITY, 1024 by default) with room for a second group and the script's own names.
SLOTS = 420
# The ops noted before a check: three rounds of the longest period it looks for. The first, early, for a loop of up
# to 64 ops a step; the later ones for up to SLOTS (a third of their ops are noted, a tuple each).
FIRST_CHECK, FIRST_WINDOW = 512, 3 * 64
CHECK_EVERY, WINDOW = 4096, 3 * SLOTS


def period(signatures, longest):
    """The shortest period of the sequence (at most `longest`, and at least twice over), or 0: its length less its
    longest border (a prefix that is also a suffix), in one pass (Knuth, Morris and Pratt's prefix function)."""
    n = len(signatures)
    border = [0] * n
    k = 0
    for i in range(1, n):
        while k and signatures[i] != signatures[k]:
            k = border[k - 1]
        if signatures[i] == signatures[k]:
            k += 1
        border[i] = k
    p = n - k
    return p if 0 < p <= min(longest, n // 2) else 0


class OpNames:
    def __init__(self, group):
        self._group = group
        self._lock = threading.Lock()
        self._next = 0
        self._held = [None] * SLOTS
        self._values = None
        self._period_name = None  # the name of the checks' allreduce
        self._slots = SLOTS  # the names recur every this many
        self._ops = 0  # the group's ops so far: the same count on every rank
        self._check_at = FIRST_CHECK
        self._noting_from = FIRST_CHECK - FIRST_WINDOW  # the ops after this one are noted for the check
        self._noted = []  # their signatures
        self._missed = False  # the last check found no period while one was in force, and kept it

    def _names(self):
        # torch names its groups alike on every rank ("0" the default group's) once it has made them, before
        # their first op; an error names the op as "torch group 0 slot 17".
        set_id = self._group.process_set.process_set_id
        group = "torch group %s%s" % (self._group.group_name, " (kolo set %d)" % set_id if set_id else "")
        self._period_name = group + " period"
        return ["%s slot %d" % (group, s) for s in range(SLOTS)]

    def _note(self, count, sample):
        """Notes an op within a check's window (with the lock held), and at the check compares periods: the check
        is the group's next op."""
        self._noted.append((count, sample.dtype, sample.shape))  # (a torch.Size is a tuple already)
        if self._ops == self._check_at:
            self._compare_periods()

    def _compare_periods(self):
        """At the same op on every rank: the names recur with the period all found, if they found the same."""
        ops = period(self._noted, len(self._noted) // 3)
        names = sum(count for count, _, _ in self._noted[len(self._noted) - ops:]) if ops else 0
        seen = torch.tensor([ops, -ops, names, -names], dtype=torch.int64, device="cpu")
        allreduce_(seen, op=Max, name=self._period_name, process_set=self._group.process_set)
        same = seen.tolist() == [ops, -ops, names, -names]
        agreed = names if same and 0 < names <= SLOTS else 0  # the names a period takes
        self._noted = []
        if agreed == 0 and self._slots != SLOTS and not self._missed:
            # (Every rank takes the same branch: `same` holds on all ranks or on none, and the state before it is the
            # same on all.)
            self._missed = True
            self._check_at += WINDOW
        else:
            self._missed = False
            slots = SLOTS if agreed == 0 or SLOTS % agreed == 0 else agreed * (SLOTS // agreed)
            self._check_at += CHECK_EVERY
            if slots != self._slots:
                self._slots, self._next = slots, 0
        self._noting_from = self._check_at - WINDOW

    def take(self, count, sample):
        """The names of the group's next `count` ops (`sample`: a tensor of the op's, for its signature); waits for
        an op still in flight under any of them."""
        self._group.check_world()
        with self._lock:
            if self._values is None:
                self._values = self._names()
            self._ops += 1
            if self._ops > self._noting_from:
                self._note(count, sample)
            first, slots_now = self._next, self._slots
            self._next = (first + count) % slots_now
            slots = [(first + i) % slots_now for i in range(count)]
            held = self._held
            waits = [held[s] for s in slots if held[s] is not None]
            for s in slots:
                held[s] = None
        for work in waits:
            work._complete()  # its result, or its error, stays for whoever waits on it
        return Named(self, slots, [self._values[s] for s in slots])

    def take_one(self, sample):
        """The name of the group's next op, on `sample`, which the caller runs to its end at once (a blocking call):
        nothing to hold. take(1)'s path without its lists: a small blocking op's Python is most of its time."""
        self._group.check_world()
        with self._lock:
            if self._values is None:
                self._values = self._names()
            self._ops += 1
            if self._ops > self._noting_from:
                self._note(1, sample)
            slot = self._next
            self._next = (slot + 1) % self._slots
            waiting, self._held[slot] = self._held[slot], None
        if waiting is not None:
            waiting._complete()
        return self._values[slot]

    def _hold(self, slots, work):
        with self._lock:
            for s in slots:
                self._held[s] = work


class Named:
    """Names taken for one collective (one per kolo op it submits); hold() marks them in flight until `work` ends."""
    __slots__ = ("_owner", "_slots", "values")

    def __init__(self, owner, slots, values):
        self._owner, self._slots, self.values = owner, slots, values

    def __iter__(self):
        return iter(self.values)

    def hold(self, work):
        if work is not None and not work._done:  # None: a blocking call, finished
            self._owner._hold(self._slots, work)
        return work
