"""kolo under torchrun (torch 2.x from PyPI): its workers join the Gloo world through the store torchrun's
agent serves, and the unchanged Horovod-style program (tests/system/elastic/elastic_digits.py) trains to one
process's weights: --standalone on one host, and two "nodes" (emulated hosts) meeting through the c10d
rendezvous. Run with a Python that has torch 2.x (tests/torch2.sh does):

    KOLO_BUILD_DIR=build .venv-torch2/bin/python -m pytest tests/system/gloo/test_torchrun.py
"""
import os
import shutil
import subprocess
import sys

import pytest

from gloo_jobs import BUILD, HERE, clean_env, run_program

torch = pytest.importorskip("torch", reason="torch is not installed in this Python (%s)" % sys.executable)
if int(torch.__version__.split(".")[0]) < 2:
    pytest.skip("torch %s's torchrun does not run under Python 3.11: use torch 2.x (tests/torch2.sh)" % torch.__version__,
                allow_module_level=True)
pytest.importorskip("sklearn", reason="the program trains on scikit-learn's digits")
sys.path.insert(0, str(HERE.parent / "elastic"))
sys.path.insert(0, str(HERE.parent / "cluster"))
from emulated_hosts import on_hosts  # noqa: E402
from test_elastic import assert_same_weights, final_word, reference  # noqa: E402

TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


def test_torchrun_standalone_trains_to_one_process_weights(tmp_path):
    out = tmp_path / "weights.pt"
    job = subprocess.run(TORCHRUN + ["--standalone", "--nproc_per_node", "2"] + run_program(out)[1:],
                         capture_output=True, text=True, timeout=300, env=clean_env())
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    weights, accuracy = reference([(None, 2)])
    assert_same_weights(out, weights)
    size, _, final = final_word(job.stdout)
    assert size == 2 and final == pytest.approx(accuracy, abs=2e-3)


RESTARTED = """
import os, sys
import torch
import kolo.torch as hvd
hvd.init()
attempt = int(os.environ["TORCHELASTIC_RESTART_COUNT"])
total = hvd.allreduce(torch.tensor([float(hvd.rank() + 1)]), op=hvd.Sum)
print("attempt %d rank %d of %d sum %g" % (attempt, hvd.rank(), hvd.size(), total.item()), flush=True)
if attempt == 0 and hvd.rank() == 1:
    os._exit(3)  # the first attempt's rank 1 fails; torchrun ends rank 0 and starts both again
hvd.allreduce(torch.tensor([1.0]), name="second")
hvd.shutdown()
"""


def test_torchrun_restarts_the_workers_and_they_meet_again_in_the_same_store(tmp_path):
    # torchrun's agent store outlives the first attempt: the second meets under keys of its own.
    program = tmp_path / "restarted.py"
    program.write_text(RESTARTED)
    job = subprocess.run(TORCHRUN + ["--standalone", "--nproc_per_node", "2", "--max-restarts", "1", str(program)],
                         capture_output=True, text=True, timeout=300, env=clean_env())
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    for line in ("attempt 0 rank 0 of 2 sum 3", "attempt 0 rank 1 of 2 sum 3", "attempt 1 rank 0 of 2 sum 3",
                 "attempt 1 rank 1 of 2 sum 3"):
        assert line in job.stdout, job.stdout[-3000:] + job.stderr[-3000:]


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("ip") is None, reason="emulated hosts need root and iproute2")
def test_torchrun_on_two_emulated_hosts_meets_through_its_c10d_rendezvous(tmp_path):
    # One torchrun agent per host, each with 2 workers; the c10d rendezvous on the first host's address.
    out = tmp_path / "weights.pt"
    program = " ".join(run_program(out)[1:])
    agent = ('$CLUSTER_AGENT %s "cd %s && PYTHONPATH=%s %s -m torch.distributed.run --nnodes 2 --nproc_per_node 2 '
             '--rdzv-backend c10d --rdzv-endpoint %s:29455 --rdzv-id kolo-test %s"')
    command = ("first=$(echo $CLUSTER_HOSTS | cut -d, -f1); second=$(echo $CLUSTER_HOSTS | cut -d, -f2); "
               + (agent % ("$first", tmp_path, BUILD / "python", sys.executable, "$first", program)) + " & a=$!; "
               + (agent % ("$second", tmp_path, BUILD / "python", sys.executable, "$first", program)) + "; b=$?; "
               "wait $a; exit $(( $? | b ))")
    job = on_hosts(["sh", "-c", command], 2, 600, clean_env())
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    weights, _ = reference([(None, 4)])
    assert_same_weights(out, weights)
