"""What the backend does when kolo's world changes in place (tests/system/elastic_in_place runs it with a rank lost):
a group of the old world refuses every op, naming why; torch's default group and a DDP on it are made again. Here the
world's number moves on as recover_in_place moves it, with the same ranks in it."""
import sys
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.distributed.distributed_c10d as c10d
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.nn.parallel import DistributedDataParallel as DDP

from kolo import _lifecycle
from kolo._errors import KoloValueError
from kolo.torch.backend._new_world import remake_ddp, remake_default_group
from kolo.torch.backend._torch_version import HANDS_NEW_GROUP

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_backend_training import STEPS, assert_close, one_process  # noqa: E402
from ddp_training import network as model, rows as data  # noqa: E402 (test_backend_training put its folder on the path)


@pytest.fixture(autouse=True)
def default_group_of_this_world():
    """The tests after these find a default group of the world they run in."""
    yield
    remake_default_group()


def _next_world():
    """What recover_in_place does to the world's number (the ranks here stay as they were)."""
    _lifecycle._world += 1


def _step(ddp, opt, rank, size):
    x, y = data()
    opt.zero_grad()
    torch.nn.functional.mse_loss(ddp(x[rank::size]), y[rank::size]).backward()
    opt.step()


def test_a_group_of_an_older_world_refuses_every_op_and_the_default_group_is_made_again(rank, size):
    old = c10d._get_default_group()
    t = torch.ones(4)
    _next_world()
    said = "torch group '0' on rank %d: made as rank %d of %d in a world that a lost peer has changed in place" % (
        rank, rank, size)
    for op in (lambda: dist.all_reduce(t), lambda: dist.broadcast(t, 0), dist.barrier,
               lambda: dist.all_to_all_single(torch.zeros(size), torch.ones(size)),
               lambda: dist.all_gather_into_tensor(torch.zeros(4 * size), t)):
        with pytest.raises(KoloValueError) as e:
            op()
        assert said in str(e.value), str(e.value)
    assert t.tolist() == [1.0] * 4  # refused before anything moved
    remake_default_group()
    new = c10d._get_default_group()
    assert new is not old and (dist.get_rank(), dist.get_world_size()) == (rank, size)
    dist.all_reduce(t)
    assert t.tolist() == [float(size)] * 4
    remake_default_group()  # the world has not changed since: the group stays
    assert c10d._get_default_group() is new


def test_a_ddp_made_again_in_a_new_world_trains_on_with_its_comm_hook(rank, size):
    net = model()
    ddp = DDP(net)
    ddp.register_comm_hook(c10d._get_default_group(), default_hooks.allreduce_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
    assert not remake_ddp(ddp)  # its world is this one
    for _ in range(STEPS // 2):
        _step(ddp, opt, rank, size)
    _next_world()
    remake_default_group()
    assert remake_ddp(ddp)
    new = c10d._get_default_group()
    assert ddp.process_group is new and ddp._comm_hooks == [(default_hooks.allreduce_hook, new)]
    for _ in range(STEPS - STEPS // 2):
        _step(ddp, opt, rank, size)
    assert_close([p.detach() for p in net.parameters()], one_process(torch.optim.SGD, lr=0.1))


@pytest.mark.skipif(not HANDS_NEW_GROUP, reason="torch %s makes a group on its members only: kolo groups of some "
                                                "ranks need torch 2.13 or later" % torch.__version__)
def test_a_ddp_on_a_group_of_some_ranks_is_not_made_again(rank, size):
    if size < 3:
        pytest.skip("a group of some ranks, not the whole world's, needs 3")
    group = dist.new_group([0, 1])
    if rank not in (0, 1):
        _next_world()
        return
    ddp = DDP(model(), process_group=group)
    _next_world()
    with pytest.raises(KoloValueError, match=r"a DistributedDataParallel on a torch group of some ranks \(\[0, 1\]\) "
                                             "does not outlive a lost peer"):
        remake_ddp(ddp)
