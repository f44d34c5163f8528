"""Elastic training in place (Open MPI 5's ULFM) beyond the digits job: TensorFlow, Keras (on TensorFlow
and JAX) and JAX loops, and the GPU path on the host double (flat, hierarchical, a frozen rank, emulated
hosts). The helpers are in in_place_job.py.

    KOLO_ULFM_BUILD_DIR=build-ulfm KOLO_ULFM_MPIRUN=.venv-ompi5/bin/mpirun python3 -m pytest tests/system/elastic_in_place
"""
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "cluster"))
from emulated_hosts import on_hosts  # noqa: E402
from in_place_job import (  # noqa: E402
    BUILD, GLOO, HERE, MPIRUN, NEEDS_ULFM_BUILD, WORLD_FLAGS, finish, job_env, kill_frozen, launch, pids, plain_launch, running)

pytestmark = NEEDS_ULFM_BUILD
# The host double's communicators run on MPI, which a Gloo world's processes do not have; on a GPU, NCCL's
# would be the Gloo world's own (not yet run there).
DOUBLE_NEEDS_MPI = pytest.mark.skipif(GLOO, reason="the host double's communicators run on MPI, which the Gloo "
                                                   "world's processes do not have")


def run_least_squares(tmp_path, script, last_line, *flags, backend=None):
    """tf_in_place.py, keras_in_place.py, jax_in_place.py or ddp_in_place.py (tests/system/elastic_in_place) on 3
    ranks, rank 2 killed before step (epoch) 10: checks that the survivors went on in place, and ended, in the same
    processes, with plain gradient descent's weights to 1e-12 (each rank takes an equal share of every
    batch: the averaged gradient is the whole batch's at any rank count). The job's output."""
    framework = backend or {"tf_in_place.py": "tensorflow", "jax_in_place.py": "jax", "ddp_in_place.py": "torch"}[script]
    if framework == "torch":  # the kolo backend needs torch 2.x: tests/torch2.sh's environment
        python = os.environ.get("KOLO_TORCH2_PYTHON", str(HERE.parents[2] / ".venv-torch2" / "bin" / "python"))
    else:
        python = os.environ.get("KOLO_ULFM_TF_PYTHON", str(HERE.parents[2] / ".venv" / "bin" / "python"))
    if not os.path.exists(python):
        # CI removes tests/torch2.sh's environment after its stage, and runs this suite's DDP case there (Gloo world).
        pytest.skip("no %s (tests/torch2.sh makes .venv-torch2; .ci/setup makes .venv)" % python)
    needs = ("keras, " if script == "keras_in_place.py" else "") + framework
    if subprocess.run([python, "-c", "import " + needs], capture_output=True).returncode != 0:
        pytest.skip("%s lacks %s" % (python, needs))
    built = {"tensorflow": "tensorflow/kolo_tf_ops.so", "jax": "jax/libkolo_xla_ffi.so", "torch": "torch"}[framework]
    if not (BUILD / "python" / "kolo" / built).exists():
        pytest.skip("kolo's %s was not built against this MPI" % built)
    env = job_env(PYTHONPATH=str(BUILD / "python"), KERAS_BACKEND=backend or "tensorflow", JAX_PLATFORMS="cpu")
    out = tmp_path / "w.npy"
    job, log = launch(tmp_path, plain_launch(3, "PYTHONPATH", "KERAS_BACKEND", "JAX_PLATFORMS") + [python, str(HERE / script),
                                                   *flags, "--kill-at", "10", "--out", str(out)], env)
    text = finish(job, log, timeout=180)
    assert job.returncode == 0, text
    started, ended = pids(text, "starts"), pids(text, "ends")
    assert len(started) == 3 and sorted(ended.values()) == sorted([started[0], started[1]]), text
    assert "in place: now rank 0 of 2" in text and last_line in text, text
    import numpy as np
    from least_squares import plain_gradient_descent
    np.testing.assert_allclose(np.load(out), plain_gradient_descent(30), rtol=0, atol=1e-12)
    return text


def test_a_tensorflow_loop_goes_on_in_place(tmp_path):
    # kolo.tensorflow's ops report the failure as TensorFlow's error carrying kolo's message; elastic.run
    # rolls back on it as on PeersFailedError. Commits at steps 4 and 8 (commit 1): steps 8 and 9 are
    # done again on 2 ranks.
    text = run_least_squares(tmp_path, "tf_in_place.py", "ranks 2  steps 30", "--steps", "30")
    assert "in place: now rank 0 of 2, from commit 1" in text, text


# Keras' part of a recovery (its callbacks, fit's error, the rollback) is the same in either world, and the ops under
# it (kolo.tensorflow's, kolo.jax's) fail over in each world in the loops above: Keras runs in the Gloo world only
# (tests/elastic_in_place.sh runs the suite in both).
KERAS_IN_ONE_WORLD = pytest.mark.skipif(not GLOO, reason="Keras' part is the same in either world: run in the Gloo "
                                                         "world (IN_PLACE_WORLD=gloo)")


@KERAS_IN_ONE_WORLD
def test_a_keras_fit_goes_on_in_place(tmp_path):
    # kolo.keras on Keras' TensorFlow backend: model.fit with the elastic callbacks; rank 2 of 3 dies as
    # epoch 10's batch begins; the survivors' fit fails (TensorFlow's InternalError carrying kolo's
    # words), elastic.run rolls back to the commit at epoch 10's start, recovers in place and fits the
    # remaining epochs on 2 ranks.
    run_least_squares(tmp_path, "keras_in_place.py", "ranks 2  epochs 30", "--epochs", "30", backend="tensorflow")


@KERAS_IN_ONE_WORLD
def test_a_keras_fit_on_jax_goes_on_in_place(tmp_path):
    # The same fit on Keras' JAX backend (kolo.keras over kolo.jax): the allreduce in fit's jitted step
    # fails with XLA's error carrying kolo's words; the survivors go back to the commit at epoch 10's
    # start (commit 9) and fit the remaining epochs on 2 ranks.
    text = run_least_squares(tmp_path, "keras_in_place.py", "ranks 2  epochs 30", "--epochs", "30", backend="jax")
    assert "in place: now rank 0 of 2, from commit 9" in text, text


def test_a_jax_loop_goes_on_in_place(tmp_path):
    # kolo.jax.elastic: JaxState and run; the allreduce inside the jitted step fails with XLA's error
    # carrying kolo's words; the survivors roll back to step 8 and go on on 2 ranks.
    text = run_least_squares(tmp_path, "jax_in_place.py", "ranks 2  steps 30", "--steps", "30")
    assert "in place: now rank 0 of 2, from commit 1" in text, text


def test_a_ddp_loop_on_the_kolo_backend_goes_on_in_place(tmp_path):
    # An unchanged DDP loop (init_process_group("kolo"), a comm hook whose state is the group) in
    # kolo.torch.elastic's TorchState: DDP's backward fails (torch's error carrying kolo's words), the survivors
    # roll back to step 8; kolo.elastic makes torch's default group again as rank r of 2, and the same DDP object
    # again on it (its hook's state the new group), and they go on to plain gradient descent's weights.
    text = run_least_squares(tmp_path, "ddp_in_place.py", "ranks 2  steps 30", "--steps", "30")
    assert "in place: now rank 0 of 2, from commit 1" in text, text
    for rank in (0, 1):
        assert re.search(r"rank %d of 2 ends with pid \d+: torch's world rank %d of 2" % (rank, rank), text), text


DEVICE_IN_PLACE = BUILD / "tests" / "device_in_place"
from device_in_place_job import seconds_to_train_again  # noqa: E402 (the program's time lines)


def check_device_in_place(text, ranks, made, shrunk, broken=False):
    """device_in_place's output (tests/system/elastic_in_place/device_in_place.cc) on `ranks` ranks, rank 1 lost at step 4:
    the survivors go on in place, every later step exact, each with `made` device communicators made and
    `shrunk` shrunk (the double checked the ranks kolo excluded), as kolo's log says too. `broken`: a killed
    peer may have broken some communicators (their error seen on a survivor before the recovery), which
    nobody then shrinks (NCCL refuses to; the double too) and every survivor makes anew where the next job
    needs them: then k fewer are shrunk and at most k more made, the same on every survivor."""
    started, ended = pids(text, "starts"), pids(text, "ends")
    assert len(started) == ranks and sorted(ended.values()) == sorted(p for r, p in started.items() if r != 1), text
    counts = set(re.findall(r"rank \d+ of %d: device communicators made (\d+), shrunk (\d+)" % (ranks - 1), text))
    assert len(counts) == 1, text  # the survivors agreed
    got_made, got_shrunk = (int(n) for n in counts.pop())
    k = shrunk - got_shrunk
    assert (got_made, got_shrunk) == (made, shrunk) or broken and 0 < k <= shrunk and made <= got_made <= made + k, text
    for old in range(ranks):
        if old != 1:
            new = old - (old > 1)
            said = ("rank %d of %d: in place now rank %d of %d, step 4 again" % (old, ranks, new, ranks - 1),
                    "rank %d of %d: device communicators made %d, shrunk %d" % (new, ranks - 1, got_made, got_shrunk))
            assert said[0] in text and said[1] in text, text
    for step in range(4, 10):
        assert "step %d on %d ranks: exact" % (step, ranks - 1) in text, text
    assert len(re.findall(r"rank \d+ of %d: training again: step 4 exact at " % (ranks - 1), text)) == ranks - 1, text
    said = re.findall(r"INFO: recovered in place: [^\n]*?(\d+) GPU communicator\(s\) shrunk", text)
    assert said == [str(got_shrunk)] * (ranks - 1), text
    return got_shrunk


@DOUBLE_NEEDS_MPI
@pytest.mark.parametrize("hierarchical", ["0", "1"], ids=["flat", "hierarchical"])
def test_the_gpu_path_goes_on_in_place_on_the_host_double(tmp_path, hierarchical):
    # Device tensors (the host double, as the GPU suite in CI) on 3 ranks; rank 1 dies while the others'
    # device collectives wait for it. Their ops fail to be rolled back (the device communicators' error
    # taken for the lost peer, in place) and recover_in_place() shrinks the device communicator in use
    # (the job's, or this host's with hierarchical allreduce) to the 2 survivors, as ncclCommShrink, or,
    # where a survivor's saw the peer's end as an error (NCCL then refuses to shrink it), every survivor
    # makes it anew.
    if not DEVICE_IN_PLACE.exists():
        pytest.skip("device_in_place was not built (tests/elastic_in_place.sh builds it)")
    job, log = launch(tmp_path, plain_launch(3, "KOLO_HIERARCHICAL_ALLREDUCE") + [str(DEVICE_IN_PLACE), "10", "4"],
                      job_env(KOLO_HIERARCHICAL_ALLREDUCE=hierarchical))
    text = finish(job, log, timeout=120)
    assert job.returncode == 0, text
    shrunk = check_device_in_place(text, 3, made=1, shrunk=1, broken=True)
    print("killed: training again %s s after the kill, %d communicator(s) shrunk" %
          (seconds(seconds_to_train_again(text)), shrunk))


@DOUBLE_NEEDS_MPI
def test_the_gpu_path_goes_on_in_place_when_a_rank_is_frozen(tmp_path):
    # The same with rank 1 frozen (SIGSTOP, alive but silent) on its own stream while the others' device
    # collectives wait for it: nothing fails by itself (NCCL reports no error for a frozen peer either);
    # kolo's peer watch (3 s) revokes, ULFM's detector (4 s) lets the shrink through, and the survivors
    # shrink the device communicator and go on, every later step exact. mpirun would wait for the frozen
    # process forever: once both survivors have exited by themselves, it is killed, whatever happened.
    if not DEVICE_IN_PLACE.exists():
        pytest.skip("device_in_place was not built (tests/elastic_in_place.sh builds it)")
    job, log = launch(tmp_path, plain_launch(3, "KOLO_PEER_TIMEOUT_SECONDS") + [str(DEVICE_IN_PLACE), "--device", "double",
                                                                        "--fault", "freeze", "10", "4"],
                      job_env(KOLO_PEER_TIMEOUT_SECONDS="3"))
    try:
        text = finish(job, log, until=["rank 0 of 2 ends", "rank 1 of 2 ends"], timeout=120)
        started = pids(text, "starts")
        survivors = [pid for rank, pid in started.items() if rank != 1]
        deadline = time.time() + 20
        while any(running(pid) for pid in survivors) and time.time() < deadline:
            time.sleep(0.2)
        assert not any(running(pid) for pid in survivors), "the survivors did not exit by themselves:\n" + text
    finally:
        kill_frozen(log, 1)
    text = finish(job, log, timeout=30)  # mpirun ends once the frozen process has
    # The double's communicators run on MPI, whose failure detector may find the frozen process before the
    # recovery and break them (NCCL's stay whole: on a GPU they shrank, tools/gpu/run_gpu_in_place.sh).
    check_device_in_place(text, 3, made=1, shrunk=1, broken=True)
    assert "rank 1 of 3: fault freeze at " in text, text
    print("frozen: training again %s s after the freeze" % seconds(seconds_to_train_again(text)))


def seconds(t):
    return "?" if t is None else "%.3f" % t  # None: the victim's last line was lost with it


@DOUBLE_NEEDS_MPI
@pytest.mark.parametrize("hosts,slots,made,shrunk", [(3, 1, 1, 1), (2, 2, 3, 2)], ids=["3x1", "2x2"])
def test_the_gpu_path_shrinks_across_emulated_hosts(tmp_path, hosts, slots, made, shrunk):
    # Hierarchical allreduce on emulated hosts, rank 1 lost. 3x1: the communicator across hosts shrinks
    # to 2 and carries on. 2x2: both hosts' communicators and both across hosts shrink (one host's with
    # nobody excluded), then the hosts are uneven (1 and 2 ranks), so the job's is made for flat allreduce.
    if not DEVICE_IN_PLACE.exists():
        pytest.skip("device_in_place was not built (tests/elastic_in_place.sh builds it)")
    command = ('H=$(echo $CLUSTER_HOSTS | sed "s/,/:{slots},/g"):{slots}; timeout 150 {kolorun} {world} --in-place --min-np 2 '
               '-np {ranks} -H $H --rsh-agent $CLUSTER_AGENT --network-interface $CLUSTER_SUBNET '
               '-x KOLO_HIERARCHICAL_ALLREDUCE {program} 10 4'
               .format(slots=slots, ranks=hosts * slots, kolorun=BUILD / "bin" / "kolorun", world=" ".join(WORLD_FLAGS),
                       program=DEVICE_IN_PLACE))
    job = on_hosts(["sh", "-c", command], hosts, 240, job_env(KOLO_MPIRUN=MPIRUN, KOLO_HIERARCHICAL_ALLREDUCE="1"))
    text = job.stdout + job.stderr
    assert job.returncode == 0, text[-4000:]
    check_device_in_place(text, hosts * slots, made, shrunk, broken=True)
