"""A sharded optimizer's checkpoints (zero_optimizer.py): its shards gathered into the unsharded optimizer's
state dict, and such a state dict, saved at any number of ranks, cut into this rank's shards."""
import torch

from kolo import _process_sets
from kolo.torch import functions, mpi_ops
from kolo.torch._parameters import hyperparameters

MASTER_KEY = "kolo_master_param"  # a 16-bit parameter's float32 master in a consolidated state dict


def consolidate(opt, to):
    """opt.consolidate_state_dict(to): collective over opt's process set."""
    local = {}
    for b in opt._buckets:
        state = opt._shard_state(b)
        local[b.index] = {k: ("tensor", str(v.dtype)) if torch.is_tensor(v) and v.dim() == 1 and
                          v.numel() == b.count else ("value", v.cpu() if torch.is_tensor(v) else v)
                          for k, v in state.items()}
        if opt._masters[b.index].dtype != b.flat.dtype:
            local[b.index][MASTER_KEY] = ("tensor", "torch.float32")
    everyone = (functions.allgather_object(local, name=opt._prefix + "state_keys", process_set=opt._process_set)
                if opt._reducing else [local])
    gathered = {}  # (bucket index, key) -> ("tensor", the whole bucket's flat values) or ("value", the value)
    jobs = []
    for b in opt._buckets:
        kinds = {}
        for theirs in everyone:
            for k, kind in theirs[b.index].items():
                kinds.setdefault(k, kind)
        state = opt._shard_state(b)
        for k in sorted(kinds):
            kind = kinds[k]
            if kind[0] == "value":
                gathered[(b.index, k)] = kind
                continue
            shard = opt._masters[b.index] if k == MASTER_KEY else state.get(k)
            if shard is None:  # this rank holds none of the bucket
                shard = torch.zeros(b.count, dtype=getattr(torch, kind[1].replace("torch.", "")),
                                    device=b.flat.device)
            if opt._reducing:
                jobs.append(((b.index, k), mpi_ops.allgather_async(
                    shard.contiguous(), name=opt._prefix + "state.%d.%s" % (b.index, k), process_set=opt._process_set)))
            else:
                gathered[(b.index, k)] = ("tensor", shard.clone())
    for key, handle in jobs:
        gathered[key] = ("tensor", mpi_ops.synchronize(handle))
    me = _process_sets.set_rank(opt._process_set) if opt._reducing else 0
    opt._consolidated = None
    if to is None or to == me:
        full = super(type(opt), opt).state_dict()  # the groups, with parameters as indices
        index = {p: i for i, p in enumerate(p for group in opt.param_groups for p in group["params"])}
        state = {}
        for (bucket, k), (kind, value) in gathered.items():
            b = opt._buckets[bucket]
            for p, offset in zip(b.params, b.offsets):
                entry = state.setdefault(index[p], {})
                if kind == "tensor":
                    entry[k] = value[offset:offset + p.numel()].view_as(p).clone()
                else:
                    entry[k] = value.clone() if torch.is_tensor(value) else value
        full["state"] = {i: state[i] for i in sorted(state)}
        opt._consolidated = full


def load(opt, state_dict):
    """opt.load_state_dict(state_dict): local, each rank taking its shards of the whole."""
    groups = state_dict["param_groups"]
    if len(groups) != len(opt.param_groups) or any(
            len(g["params"]) != len(mine["params"]) for g, mine in zip(groups, opt.param_groups)):
        raise ValueError("load_state_dict: the state is another model's: its parameter groups hold %s parameters, "
                         "this optimizer's %s" % ([len(g["params"]) for g in groups],
                                                   [len(g["params"]) for g in opt.param_groups]))
    by_index = {}
    for saved, mine in zip(groups, opt.param_groups):
        for i, p in zip(saved["params"], mine["params"]):
            by_index[i] = p
    state = {}
    for i, entry in state_dict["state"].items():
        p = by_index.get(int(i))
        if p is None:
            raise ValueError("load_state_dict: the state has an entry for parameter %s, which its groups lack" % i)
        for k, v in entry.items():
            if torch.is_tensor(v) and v.dim() > 0 and tuple(v.shape) != tuple(p.shape):
                raise ValueError("load_state_dict: the state is another model's: its '%s' for parameter '%s' has "
                                 "shape %s, the parameter %s" % (k, opt._names.get(p, i), tuple(v.shape),
                                                                  tuple(p.shape)))
        state[p] = entry
    for saved, mine in zip(groups, opt.param_groups):
        mine.update(hyperparameters(saved))
    inner_state = {}
    with torch.no_grad():
        for b in opt._buckets:
            entries = [state.get(p) for p in b.params]
            if all(e is None for e in entries) or b.count == 0:
                continue
            first = next(e for e in entries if e is not None)
            shard_state = {}
            for k, v in first.items():
                if torch.is_tensor(v) and v.dim() > 0:
                    flat = torch.cat([(e[k] if e is not None and k in e else torch.zeros_like(p)).reshape(-1)
                                      for e, p in zip(entries, b.params)])
                    value = flat[b.start:b.start + b.count].to(device=b.flat.device).clone()
                    if k == MASTER_KEY:
                        opt._masters[b.index].copy_(value)
                        continue
                    shard_state[k] = value
                else:
                    shard_state[k] = v.clone() if torch.is_tensor(v) else v
            if shard_state:
                inner_state[opt._masters[b.index]] = shard_state
            b.version = b.flat._version
    if opt._inner is not None:
        opt._inner.state.clear()
        opt._inner.state.update(inner_state)
        opt._synchyperparameters()
    opt._consolidated = None
