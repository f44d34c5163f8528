"""kolo.mesh: the host-major layout (a pure function, tried on layouts mpirun makes), and meshes of the
job's ranks with their process sets, exact along each axis."""
import pytest
import torch

import kolo.torch as kolo
from kolo import _mesh


def test_layout_is_host_major_whatever_the_rank_numbering():
    # mpirun --map-by slot: hosts hold consecutive ranks.
    by_slot = [(0, 0), (0, 1), (1, 0), (1, 1)]
    assert _mesh.layout((2, 2), by_slot).tolist() == [[0, 1], [2, 3]]
    # --map-by node: ranks dealt round-robin; the inner axis still stays inside a host.
    by_node = [(0, 0), (1, 0), (0, 1), (1, 1)]
    grid = _mesh.layout((2, 2), by_node)
    assert grid.tolist() == [[0, 2], [1, 3]]
    assert _mesh.lines(grid, 1) == [[0, 2], [1, 3]]  # "model" lines: one host each
    assert _mesh.lines(grid, 0) == [[0, 1], [2, 3]]  # "batch" lines: across hosts
    # 3 axes: lines along the middle one, in row-major order of the others.
    grid = _mesh.layout((2, 2, 2), [(r // 4, r % 4) for r in range(8)])
    assert _mesh.lines(grid, 1) == [[0, 2], [1, 3], [4, 6], [5, 7]]


def test_a_mesh_gives_a_process_set_per_axis(rank, size):
    if size % 2:
        shape = (size,)
        names = ("data",)
    else:
        shape = (2, size // 2)
        names = ("batch", "model")
    mesh = kolo.mesh(shape, names)
    try:
        assert mesh.shape == shape and mesh.axis_names == names
        assert mesh.ranks.tolist() == torch.arange(size).reshape(shape).tolist()  # one host, by slot
        for axis, name in enumerate(names):
            ps = mesh.process_set(name)
            line = _mesh.lines(mesh.ranks, axis)
            members = next(l for l in line if rank in l)
            if len(members) == size:
                assert ps is kolo.global_process_set
            assert ps.ranks == sorted(members) and ps.included()
            assert mesh.coordinate(name) == members.index(rank) and mesh.size(name) == shape[axis]
            total = kolo.allreduce(torch.tensor([float(rank)]), op=kolo.Sum, name="mesh." + name, process_set=ps)
            assert total.item() == float(sum(members))
        with pytest.raises(ValueError, match="no axis 'other'"):
            mesh.process_set("other")
    finally:
        mesh.remove()


def test_bad_meshes_are_refused(size):
    with pytest.raises(ValueError, match=r"holds %d ranks, but the job has %d" % (size + 1, size)):
        kolo.mesh((size + 1,), ("a",))
    with pytest.raises(ValueError, match="2 axes but 1 axis names"):
        kolo.mesh((size, 1), ("a",))
    with pytest.raises(ValueError, match="axis names must differ"):
        kolo.mesh((size, 1), ("a", "a"))
