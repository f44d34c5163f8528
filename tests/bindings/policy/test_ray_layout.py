"""kolo.ray's rank layout and the driver's store server, without Ray: ranks packed by node, each rank's variables,
the GPUs each rank sees."""
import pytest

from kolo._abi import _C
from kolo._errors import KoloValueError
from kolo.ray._layout import Place, rank_env, seats, visible_gpus


def places(*nodes, gpus=()):
    return [Place(node_id=n, ip="10.0.0.%d" % ord(n[-1]), hostname="host-" + n, gpu_ids=gpus) for n in nodes]


def test_ranks_are_packed_by_node_in_the_order_nodes_first_appear():
    got = [(s.worker, s.rank, s.local_rank, s.local_size, s.node) for s in seats(places("b", "a", "b", "a", "b"))]
    assert got == [(0, 0, 0, 3, 0), (2, 1, 1, 3, 0), (4, 2, 2, 3, 0), (1, 3, 0, 2, 1), (3, 4, 1, 2, 1)]


def test_each_rank_gets_the_store_and_its_place_in_torchs_names():
    s = seats(places("a", "b"))[1]
    assert rank_env(s, 2, {"KOLO_STORE_ADDR": "10.0.0.9", "KOLO_STORE_PORT": "4000"}) == {
        "KOLO_STORE_ADDR": "10.0.0.9", "KOLO_STORE_PORT": "4000", "RANK": "1", "WORLD_SIZE": "2",
        "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": "1"}


def test_every_rank_of_a_node_sees_the_nodes_gpus_in_local_rank_order():
    ps = [Place("n1", "10.0.0.1", "h1", ("3",)), Place("n2", "10.0.0.2", "h2", ("0",)),
          Place("n1", "10.0.0.1", "h1", ("1",))]
    assert visible_gpus(ps, seats(ps)) == {0: "3,1", 2: "3,1", 1: "0"}
    assert visible_gpus(places("a", "a"), seats(places("a", "a"))) == {}


def test_the_store_server_serves_on_an_ephemeral_port_until_stopped():
    server = _C.StoreServer("127.0.0.1", 0, "secret")
    assert 0 < server.port < 65536
    assert [server.add("kolo/job/hosts_changed", 1), server.add("kolo/job/hosts_changed", 2)] == [1, 3]
    server.stop()
    with pytest.raises(RuntimeError, match=r"^StoreServer.add\('k'\): the server was stopped$"):
        server.add("k", 1)
    assert server.port == 0
    with pytest.raises(KoloValueError, match="^kolo_store_server_start: port 70000 is not from 0 to 65535$"):
        _C.StoreServer("127.0.0.1", 70000, "secret")
