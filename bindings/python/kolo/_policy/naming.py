"""Names for ops called without one. Ranks match ops by name, so every rank must give an unnamed op the
same name: each binding numbers its unnamed calls per kind of op and per process set, in call (or trace)
order, which is the same on every rank running the same program. This is the engine's own scheme for
the unnamed ops it is handed (src/api/kolo.cc, which kolo.torch relies on); the bindings whose ops need
their name before they reach the engine (a TensorFlow op's attribute, an XLA custom call's) number here."""
import collections
import itertools


class Namer:
    """Names "<prefix>.<kind>.<n>" for one binding's unnamed ops."""

    def __init__(self, prefix):
        self.prefix = prefix
        self._counters = collections.defaultdict(itertools.count)

    def name(self, name, kind, process_set=None):
        """`name` as a string, or the next name for an unnamed op of `kind` in `process_set`. Only ranks
        of a set call its ops, so a set's count must not move the others'."""
        if name is not None:
            return str(name)
        set_id = getattr(process_set, "process_set_id", 0) or 0
        return "%s.%s.%d" % (self.prefix, kind, next(self._counters[(kind, set_id)]))
