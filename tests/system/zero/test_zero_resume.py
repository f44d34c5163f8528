"""A sharded optimizer's checkpoint (DistributedOptimizer(zero_stage), consolidated on rank 0) written by a
job on 4 ranks and resumed by jobs on 2 and 3 ranks, at either stage: each ends with one process's weights
for the same 12 steps on the full batches.

    KOLO_BUILD_DIR=build python3 -m pytest tests/system/zero
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
BUILD = Path(os.environ.get("KOLO_BUILD_DIR", HERE.parents[2] / "build")).resolve()
JOB = HERE / "zero_resume_job.py"


def run(ranks, *args):
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    done = subprocess.run([str(BUILD / "bin" / "kolorun"), "-np", str(ranks), sys.executable, str(JOB), *args],
                          env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=120)
    assert done.returncode == 0, done.stdout
    return done.stdout


def one_process(steps):
    sys.path.insert(0, str(HERE))
    import torch
    import torch.nn.functional as F
    from zero_resume_job import batch, make_model
    model = make_model()
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    for step in range(steps):
        x, y = batch(step)
        optimizer.zero_grad()
        F.mse_loss(model(x), y).backward()
        optimizer.step()
    return model.state_dict()


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("zero") / "at4.pt"
    text = run(4, "--stage", "2", "--steps", "6", "--save", str(path))
    assert "rank 3 of 4: 6 steps from step 0, zero_stage 2" in text, text
    return path


@pytest.mark.parametrize("ranks,stage", [(2, 2), (3, 1), (3, 2)])
def test_a_checkpoint_of_4_ranks_resumes_at_another_size(checkpoint, tmp_path, ranks, stage):
    import torch
    out = tmp_path / "weights.pt"
    text = run(ranks, "--stage", str(stage), "--first-step", "6", "--steps", "6", "--resume", str(checkpoint),
               "--out", str(out))
    assert "rank %d of %d: 6 steps from step 6" % (ranks - 1, ranks) in text, text
    want, got = one_process(12), torch.load(out)
    for name, value in want.items():
        assert torch.allclose(got[name], value, atol=1e-5, rtol=0), (name, (got[name] - value).abs().max().item())
