"""docs/architecture.md's layers hold in the sources (issue 54): each folder of src/ includes only the folders
below it in the order the page gives, so that no layer reaches up. The CUDA backend implements the device seam
that its user, the GPU collectives in comm/device/, owns: that one header is all it takes from above."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
# Top to bottom; `kolo` is include/kolo, the public vocabulary every layer speaks.
ORDER = ["api", "engine", "settings", "comm", "store", "cpu", "common", "kolo"]
# Beside the order: the CUDA backend sits under api (which composes it) and implements comm's device seam.
CUDA_MAY_INCLUDE = {"comm/device/device.h", "common", "kolo"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


def includes_by_room():
    """{(room, included path)} over src/, a room being src/'s first-level folder."""
    out = set()
    for path in (ROOT / "src").rglob("*"):
        if path.suffix not in (".h", ".cc", ".cu"):
            continue
        room = path.relative_to(ROOT / "src").parts[0]
        for target in INCLUDE.findall(path.read_text()):
            if "/" in target:  # a bare name is a file beside this one
                out.add((room, target))
    return out


def reaching_up(pairs):
    bad = []
    for room, target in sorted(pairs):
        to = target.split("/")[0]
        if to == room:
            continue
        if room == "cuda":
            allowed = target in CUDA_MAY_INCLUDE or to in CUDA_MAY_INCLUDE
        elif to == "cuda":
            allowed = room == "api"
        else:
            allowed = room in ORDER and to in ORDER and ORDER.index(to) > ORDER.index(room)
        if not allowed:
            bad.append("%s includes %s" % (room, target))
    return bad


def test_no_folder_of_src_includes_one_above_it():
    assert reaching_up(includes_by_room()) == []


def test_the_page_gives_the_same_order():
    text = (ROOT / "docs" / "architecture.md").read_text()
    assert "(Face -> Engine -> Settings -> Comm -> {Cpu, Device seam <- Cuda})" in text
    for room in ORDER[:-1]:
        assert "`src/%s`" % room in text, room


def test_the_check_finds_a_layer_reaching_up():
    pairs = {("comm", "engine/engine.h"), ("settings", "comm/topology.h"), ("cuda", "comm/mpi/mpi_world.h"),
             ("engine", "cuda/nccl_comm.h"), ("cpu", "common/half.h")}
    assert reaching_up(pairs) == ["comm includes engine/engine.h", "cuda includes comm/mpi/mpi_world.h",
                                  "engine includes cuda/nccl_comm.h"]
