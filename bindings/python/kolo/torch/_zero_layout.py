"""Where each rank's shard of a sharded optimizer lies (DistributedOptimizer(zero_stage=1|2)).

The parameters are cut into buckets: consecutive parameters of one parameter group and one dtype, taken
in the reverse of the optimizer's order (the order in which backward produces their gradients), each up
to `bucket_bytes`. Each bucket is one flat run of elements, split among the ranks exactly as kolo's
reducescatter and allgather split rows (evenly, the lower ranks taking one more): a rank's shard of a
bucket is what its reducescatter returns and what its allgather contributes, and a parameter may straddle
two ranks' shards. Every rank's shards hold within one element per bucket of 1/N of the parameters.
"""
from kolo._abi import _C


def block(count, rank, size):
    """(start, length) of rank's block of `count` elements split among `size` ranks: the engine's own cut
    (reducescatter_rows), which its reducescatter and allgather of the shards follow."""
    start = sum(_C.reducescatter_rows(count, r, size) for r in range(rank))
    return start, _C.reducescatter_rows(count, rank, size)


class Bucket:
    """Parameters reduced and gathered together, and this rank's shard of their flat elements."""

    def __init__(self, index, group, params, rank, size):
        self.index = index
        self.group = group  # index of the parameter group
        self.params = params
        self.offsets = []
        total = 0
        for p in params:
            self.offsets.append(total)
            total += p.numel()
        self.numel = total
        self.flat = None        # the parameters' buffer (zero_optimizer.py)
        self.grad_flat = None   # stage 1: the gradients' buffer
        self.place(rank, size)

    def place(self, rank, size):
        """This rank's shard of `size` ranks (again, when elastic training in place changed the size)."""
        self.start, self.count = block(self.numel, rank, size)
        self.grad_shard = None  # stage 2: where its reduce-scatter leaves this rank's shard

    def pieces(self):
        """(parameter, start in the parameter's flat elements, start in the shard, length) for every
        parameter that overlaps this rank's shard."""
        end = self.start + self.count
        for p, offset in zip(self.params, self.offsets):
            lo, hi = max(offset, self.start), min(offset + p.numel(), end)
            if lo < hi:
                yield p, lo - offset, lo - self.start, hi - lo


def make_buckets(param_groups, rank, size, bucket_bytes):
    """The buckets of the parameters (those that require gradients) of `param_groups`, for `rank` of
    `size` ranks."""
    buckets = []
    order = [(g, p) for g, group in enumerate(param_groups) for p in group["params"] if p.requires_grad]
    current, current_bytes = [], 0
    for g, p in reversed(order):
        nbytes = p.numel() * p.element_size()
        if current and (current[0][0] != g or current[0][1].dtype != p.dtype or current_bytes + nbytes > bucket_bytes):
            buckets.append(Bucket(len(buckets), current[0][0], [q for _, q in current], rank, size))
            current, current_bytes = [], 0
        current.append((g, p))
        current_bytes += nbytes
    if current:
        buckets.append(Bucket(len(buckets), current[0][0], [q for _, q in current], rank, size))
    return buckets
