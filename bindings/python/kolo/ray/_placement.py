"""The workers' placement group: num_workers packed onto as few nodes as they fit (PACK), or num_hosts nodes with
num_workers_per_host each (one bundle a node, STRICT_SPREAD), as horovod.ray places them. A cluster that cannot
hold them is an error naming what was asked and what the cluster has, once placement_group_timeout_s passes."""
from dataclasses import dataclass
from typing import Optional

import ray
from ray.util.placement_group import placement_group, remove_placement_group
from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy


@dataclass
class Shape:
    num_workers: int
    cpus_per_worker: float
    gpus_per_worker: float
    num_hosts: Optional[int] = None  # None: packed

    def per_worker(self):
        res = {"CPU": self.cpus_per_worker}
        if self.gpus_per_worker:
            res["GPU"] = self.gpus_per_worker
        return res


class Placement:
    """The group and, for each worker, the scheduling strategy that puts it in its bundle."""

    def __init__(self, shape: Shape, timeout_s: float, group=None):
        self.shape = shape
        self._owned = group is None
        if group is None:
            group = placement_group(self._bundles(), strategy="PACK" if shape.num_hosts is None else "STRICT_SPREAD")
            try:
                ray.get(group.ready(), timeout=timeout_s)
            except ray.exceptions.GetTimeoutError:
                remove_placement_group(group)
                raise RuntimeError(self._unplaceable(timeout_s)) from None
        self.group = group

    def _bundles(self):
        s = self.shape
        if s.num_hosts is None:
            return [s.per_worker() for _ in range(s.num_workers)]
        per_host = s.num_workers // s.num_hosts
        return [{k: v * per_host for k, v in s.per_worker().items()} for _ in range(s.num_hosts)]

    def _unplaceable(self, timeout_s):
        s = self.shape
        asked = "%d workers of %s" % (s.num_workers, s.per_worker())
        if s.num_hosts is not None:
            asked += " on %d nodes (%d each)" % (s.num_hosts, s.num_workers // s.num_hosts)
        alive = [n for n in ray.nodes() if n.get("Alive")]
        has = {k: v for k, v in ray.cluster_resources().items() if k in ("CPU", "GPU")}
        return ("RayExecutor: Ray could not place %s within %g s (placement_group_timeout_s): the cluster has %s "
                "in all, on %d node(s); ask for fewer workers or resources, or add nodes"
                % (asked, timeout_s, has, len(alive)))

    def strategy(self, worker: int):
        s = self.shape
        bundle = worker if s.num_hosts is None else worker // (s.num_workers // s.num_hosts)
        if not self._owned:
            bundle = -1  # a group of the caller's (Ray Tune's trial): any of its bundles
        return PlacementGroupSchedulingStrategy(placement_group=self.group, placement_group_bundle_index=bundle)

    def remove(self):
        if self._owned and self.group is not None:
            remove_placement_group(self.group)
        self.group = None
