"""init_process_group("kolo") as users start it: torchrun, kolorun --gloo, kolorun, mpirun with no MASTER_ADDR;
an unchanged DDP program trains to one process's weights under each. A killed or frozen rank ends every other
rank's step with an error naming it, within the peer timeout; a world kolo disagrees with is refused.
Run with a Python that has torch 2.x (tests/torch2.sh does):

    KOLO_BUILD_DIR=build .venv-torch2/bin/python -m pytest tests/system/torch_backend
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "gloo"))
from gloo_jobs import KOLORUN, bare_launch, clean_env, free_port  # noqa: E402

torch = pytest.importorskip("torch", reason="torch is not installed in this Python (%s)" % sys.executable)
if int(torch.__version__.split(".")[0]) < 2:
    pytest.skip("the kolo backend needs torch 2.x (tests/torch2.sh runs this)", allow_module_level=True)
sys.path.insert(0, str(HERE))
from ddp_training import one_process_weights  # noqa: E402

PROGRAM = str(HERE / "ddp_training.py")
MPIRUN = shutil.which("mpirun")
ROOT_OK = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}


def assert_one_process_weights(out):
    got = torch.load(out)
    for g, e in zip(got, one_process_weights()):
        assert torch.allclose(g, e, rtol=0, atol=1e-12), (g - e).abs().max().item()


def launches():
    # torchrun runs the script with its own Python; the others run the command they are given.
    yield "torchrun", [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2"]
    yield "kolorun --gloo", [KOLORUN, "--gloo", "-np", "2", sys.executable]
    if MPIRUN:
        yield "kolorun", [KOLORUN, "-np", "2", sys.executable]
        yield "mpirun", [MPIRUN, "-np", "2", "-x", "PYTHONPATH", sys.executable]


@pytest.mark.parametrize("name, launcher", list(launches()), ids=[n for n, _ in launches()])
def test_an_unchanged_ddp_program_trains_to_one_process_weights(tmp_path, name, launcher):
    out = tmp_path / "weights.pt"
    job = subprocess.run(launcher + [PROGRAM, "kolo", str(out)], capture_output=True, text=True,
                         timeout=180, env=clean_env(**ROOT_OK))
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert sorted(re.findall(r"rank (\d) of 2 done on kolo", job.stdout)) == ["0", "1"]
    assert_one_process_weights(out)


def test_a_program_that_leaves_while_a_futures_callback_runs_ends_as_usual():
    # Before, the completion thread was stopped inside torch's future at the interpreter's exit: an abort (134).
    job = subprocess.run([KOLORUN, "--gloo", "-np", "2", sys.executable, str(HERE / "exit_during_callback.py")],
                         capture_output=True, text=True, timeout=120, env=clean_env(**ROOT_OK))
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert sorted(re.findall(r"rank (\d) callback done: \[2.0, 2.0\]", job.stdout)) == ["0", "1"]


@pytest.mark.parametrize("fate", ["kill", "freeze"])
def test_a_lost_rank_ends_the_others_ddp_step_naming_it(tmp_path, fate):
    start = time.monotonic()
    port = free_port()
    procs = []
    for r in range(3):
        env = clean_env(RANK=r, WORLD_SIZE=3, LOCAL_RANK=r, LOCAL_WORLD_SIZE=3, MASTER_ADDR="127.0.0.1",
                        MASTER_PORT=port, KOLO_PEER_TIMEOUT_SECONDS=3)
        procs.append(subprocess.Popen([sys.executable, PROGRAM, "kolo", "--fate", fate], env=env,
                                      stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    try:
        survivors = [p.communicate(timeout=90) for p in procs[:2]]
        elapsed = time.monotonic() - start
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGCONT)
                p.kill()
            p.communicate()
    named = {}  # by survivor: the other ranks its step's error names
    for r, (out, err) in enumerate(survivors):
        assert procs[r].returncode == 3, out[-2000:] + err[-2000:]
        failed = re.search(r"rank %d step 2 failed: (.*)" % r, out)
        assert failed, out[-2000:] + err[-2000:]
        named[r] = {int(n) for n in re.findall(r"\brank (\d+)\b", failed.group(1))} - {r}
    for r, (out, err) in enumerate(survivors):
        # Each survivor names the lost rank, or the survivor whose links ended first on it (its step's error
        # can reach it before rank 0's peer watch says which rank was lost), which names the lost one.
        assert 2 in named[r] or any(2 in named.get(s, ()) for s in named[r]), \
            (named, out[-2000:] + err[-2000:])
    # The survivors' steps end within the peer timeout (3 s) and start-up, not torch's 30 minutes.
    assert elapsed < 60


def test_a_world_kolo_disagrees_with_is_refused_naming_both(tmp_path):
    results = bare_launch(2, [sys.executable, "-c",
                              "import os, torch.distributed as dist, kolo.torch\n"
                              "dist.init_process_group('kolo', rank=int(os.environ['RANK']), world_size=3)"],
                          timeout=90, KOLO_GLOO_TIMEOUT_SECONDS=20)
    text = "".join(r.stderr for r in results)
    assert all(r.returncode != 0 for r in results), text[-3000:]
    assert re.search(r"init_process_group\('kolo'\) on rank \d: torch's world has 3 ranks .* kolo's world has 2", text) \
        or "WORLD_SIZE" in text, text[-3000:]


GLOO_DEFAULT = """
import torch, torch.distributed as dist, kolo.torch
dist.init_process_group("gloo")
kolo_group = dist.new_group(backend="kolo")
t = torch.full((3,), float(dist.get_rank() + 1))
dist.all_reduce(t, group=kolo_group)
g = torch.full((3,), float(dist.get_rank() + 1))
dist.all_reduce(g)
refusal = "none (not a member)"
try:
    dist.new_group([0], backend="kolo")
except Exception as e:
    refusal = str(e)
print("rank %d kolo %s gloo %s" % (dist.get_rank(), t.tolist(), g.tolist()), flush=True)
print("rank %d refusal: %s" % (dist.get_rank(), refusal), flush=True)
"""


def test_a_kolo_group_beside_a_gloo_default_group(tmp_path):
    program = tmp_path / "beside.py"
    program.write_text(GLOO_DEFAULT)
    job = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                          str(program)], capture_output=True, text=True, timeout=180, env=clean_env())
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    for r in range(2):
        assert "rank %d kolo [3.0, 3.0, 3.0] gloo [3.0, 3.0, 3.0]" % r in job.stdout
    assert re.search(r"rank 0 refusal: new_group\(ranks=\[0\], backend='kolo'\) on rank 0: torch makes this group "
                     r"on its members only", job.stdout), job.stdout[-3000:]
