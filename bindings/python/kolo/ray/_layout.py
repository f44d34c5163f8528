"""Which worker gets which rank: ranks are packed by node (every rank of a node next to each other, the nodes in
the order their first worker was placed), so that kolo's shared-memory path and hierarchical allreduce see the
cluster's real layout; and the variables each rank starts kolo's Gloo world with. No Ray in here."""
from dataclasses import dataclass, field
from typing import Dict, List, Sequence


@dataclass(frozen=True)
class Place:
    """Where one worker (a Ray actor) runs, as it reports it."""
    node_id: str
    ip: str
    hostname: str
    gpu_ids: Sequence[str] = field(default_factory=tuple)


@dataclass(frozen=True)
class Seat:
    """One rank: the worker it is (index into the workers as created) and its place in the job."""
    worker: int
    rank: int
    local_rank: int
    local_size: int
    node: int


def seats(places: List[Place]) -> List[Seat]:
    """One Seat per worker, in rank order."""
    by_node: Dict[str, List[int]] = {}
    for i, p in enumerate(places):
        by_node.setdefault(p.node_id, []).append(i)
    out = []
    for node, workers in enumerate(by_node.values()):
        for local_rank, w in enumerate(workers):
            out.append(Seat(worker=w, rank=len(out), local_rank=local_rank, local_size=len(workers), node=node))
    return out


def visible_gpus(places: List[Place], seat_list: List[Seat]) -> Dict[int, str]:
    """CUDA_VISIBLE_DEVICES by worker: every GPU Ray gave the node's workers, in local rank order, so that a
    script's torch.cuda.set_device(hvd.local_rank()) picks the GPU Ray gave that rank (as under mpirun, where
    each rank sees the node's GPUs). Empty where Ray gave no GPUs."""
    by_node: Dict[int, List[str]] = {}
    for s in seat_list:
        by_node.setdefault(s.node, []).extend(str(g) for g in places[s.worker].gpu_ids)
    return {s.worker: ",".join(by_node[s.node]) for s in seat_list if by_node[s.node]}


def rank_env(seat: Seat, size: int, store: Dict[str, str]) -> Dict[str, str]:
    """What one rank's process needs to join the job: the store (KOLO_STORE_*, KOLO_JOB_ID) and its place
    (torch's names, which kolo's Gloo world and torch.distributed's env:// both read)."""
    env = dict(store)
    env.update(RANK=str(seat.rank), WORLD_SIZE=str(size), LOCAL_RANK=str(seat.local_rank),
               LOCAL_WORLD_SIZE=str(seat.local_size))
    return env
