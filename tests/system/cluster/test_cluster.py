"""Real multi-host jobs on emulated hosts (tests/system/cluster/cluster.sh): 2 hosts x 2 ranks.

Run by ctest (KOLO_BUILD_DIR set), or as root: KOLO_BUILD_DIR=build python3 -m pytest tests/system/cluster
"""
import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from emulated_hosts import on_hosts
from processes import pids_whose_command_line, running

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
BUILD = Path(os.environ.get("KOLO_BUILD_DIR", ROOT / "build")).resolve()

if os.geteuid() != 0:
    pytest.skip("emulated hosts need root (network namespaces)", allow_module_level=True)
if shutil.which("ip") is None or shutil.which("unshare") is None:
    pytest.skip("emulated hosts need iproute2's ip and util-linux's unshare", allow_module_level=True)

# Hosts fill in order: ranks 0-1 on the first, 2-3 on the second.
HOSTS = '"$(echo $CLUSTER_HOSTS | sed "s/,/:2,/g"):2"'


def on_cluster(shell_command, timeout=300, env=None, hosts=2):
    """Runs a shell command with the cluster up (its variables set), then tears the cluster down."""
    return on_hosts(["sh", "-c", shell_command], hosts, timeout, env)


def test_every_collective_is_exact_across_hosts_flat_and_hierarchical():
    # The whole MPI suite, on 2 hosts: topology (local and cross ranks), every op and dtype, the
    # hierarchical allreduce and allgather (now crossing hosts for real) against the exact results
    # (allreduce goes hierarchical by default here: 2 hosts x 2 ranks; flat just below).
    # Left out: the two stress runs with 100- and 1000-byte segments. They exercise the engine's
    # bookkeeping, which mpi_np1..4 cover on one host; across hosts every tiny segment is a TCP round
    # trip, and they alone took 230 s of the suite's 265 s (near the timeout on a busy machine).
    stress = "Allreduce.ManyInFlightSmallSegmentsEverythingPacked:Allreduce.ManyInFlightSmallFusionBufferAndZeroCopy"
    job = on_cluster("mpirun $CLUSTER_MPIRUN_ARGS -np 4 -H %s --map-by slot -x CLUSTER_HOST_COUNT=2 %s "
                     "--gtest_filter=-%s" % (HOSTS, BUILD / "tests" / "kolo_mpi_tests", stress),
                     env=dict(os.environ, CLUSTER_HOST_COUNT="2"))
    assert job.returncode == 0, job.stdout[-4000:] + job.stderr[-4000:]
    assert "[  PASSED  ]" in job.stdout and "FAILED" not in job.stdout


def test_flat_allreduce_is_exact_across_hosts():
    # KOLO_HIERARCHICAL_ALLREDUCE=0: the flat path (MPI_Allreduce across hosts), which the default
    # leaves on this layout, through the allreduce suite.
    stress = "Allreduce.ManyInFlightSmallSegmentsEverythingPacked:Allreduce.ManyInFlightSmallFusionBufferAndZeroCopy"
    job = on_cluster("mpirun $CLUSTER_MPIRUN_ARGS -np 4 -H %s --map-by slot -x CLUSTER_HOST_COUNT=2 "
                     "-x KOLO_HIERARCHICAL_ALLREDUCE=0 %s --gtest_filter=*Allreduce*-%s"
                     % (HOSTS, BUILD / "tests" / "kolo_mpi_tests", stress),
                     env=dict(os.environ, CLUSTER_HOST_COUNT="2"))
    assert job.returncode == 0, job.stdout[-4000:] + job.stderr[-4000:]
    assert "[  PASSED  ]" in job.stdout and "FAILED" not in job.stdout


def gloo_built():
    return "[X] Gloo" in subprocess.run([str(BUILD / "bin" / "kolorun"), "--check-build"], capture_output=True,
                                        text=True).stdout


# The Gloo world's variables for mpirun's ranks: kolo forms a Gloo world (rank 0, on the first host, serves the
# store), mpirun only starts the processes and gives the suite's few MPI side channels.
GLOO = "-x KOLO_CONTROLLER=gloo -x MASTER_ADDR=$(echo $CLUSTER_HOSTS | cut -d, -f1) -x MASTER_PORT=29881"


@pytest.mark.skipif(not gloo_built(), reason="this kolo was built without Gloo")
@pytest.mark.parametrize("hierarchical", ["1", "0"])
def test_every_collective_is_exact_across_hosts_in_the_gloo_world(hierarchical):
    # The MPI suite's collectives in the Gloo world on 2 hosts x 2 ranks: Gloo's TCP connections between the
    # hosts, the host's shared memory inside each; hierarchical, and flat (the allreduce suite alone: the setting
    # changes nothing else, as in the MPI world's flat case above).
    stress = "Allreduce.ManyInFlightSmallSegmentsEverythingPacked:Allreduce.ManyInFlightSmallFusionBufferAndZeroCopy"
    only = "" if hierarchical == "1" else "*Allreduce*"
    job = on_cluster("mpirun $CLUSTER_MPIRUN_ARGS -np 4 -H %s --map-by slot -x CLUSTER_HOST_COUNT=2 %s "
                     "-x KOLO_HIERARCHICAL_ALLREDUCE=%s %s --gtest_filter=%s-%s"
                     % (HOSTS, GLOO, hierarchical, BUILD / "tests" / "kolo_mpi_tests", only, stress),
                     env=dict(os.environ, CLUSTER_HOST_COUNT="2"))
    assert job.returncode == 0, job.stdout[-4000:] + job.stderr[-4000:]
    assert "[  PASSED  ]" in job.stdout and "FAILED" not in job.stdout


@pytest.mark.skipif(not gloo_built(), reason="this kolo was built without Gloo")
def test_hierarchical_allreduce_on_three_hosts_in_the_gloo_world():
    # 3 hosts x 1 rank: kolo's ring over the hosts, on its lane, over Gloo's connections.
    job = on_cluster("mpirun $CLUSTER_MPIRUN_ARGS -np 3 -H \"$(echo $CLUSTER_HOSTS | sed \"s/,/:1,/g\"):1\" "
                     "--map-by slot %s %s --gtest_filter=Allreduce.Hierarchical*"
                     % (GLOO, BUILD / "tests" / "kolo_mpi_tests"), hosts=3)
    assert job.returncode == 0, job.stdout[-4000:] + job.stderr[-4000:]
    assert "[  PASSED  ]" in job.stdout and "FAILED" not in job.stdout


@pytest.mark.skipif(not gloo_built() or not (BUILD / "python" / "kolo").exists(), reason="needs Gloo and kolo.torch")
def test_kolorun_gloo_trains_the_example_across_hosts_without_mpirun():
    # kolorun --gloo reaches the other host through the agent (as through ssh), serves the store on this
    # machine's address in the hosts' subnet, and the ranks train as under mpirun.
    command = ("%s --gloo -np 4 -H %s --rsh-agent $CLUSTER_AGENT %s %s"
               % (BUILD / "bin" / "kolorun", HOSTS, sys.executable, ROOT / "examples" / "pytorch" / "digits_kolo.py"))
    job = on_cluster(command, env=dict(os.environ, PYTHONPATH=str(BUILD / "python")))
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    accuracy = float(job.stdout.strip().splitlines()[-1].rsplit(" ", 1)[1])
    assert accuracy >= 0.96, job.stdout


@pytest.mark.parametrize("per_host,thread_level", [(1, "multiple"), (2, "multiple"), (1, "serialized")])
def test_hierarchical_allreduce_on_three_hosts_is_exact(per_host, thread_level):
    # On 2 hosts (above) the cross-host stage of hierarchical allreduce is a pairwise exchange; on more,
    # kolo's ring over the hosts, per segment on a thread of its own (src/comm/host/cross_host_lane.h),
    # segments in flight; where the application gave MPI_THREAD_SERIALIZED, on kolo's thread, one
    # segment at a time. 3 hosts x 1 and x 2 ranks: every dtype and op, 4 KiB segments (many in flight,
    # blocks of a few elements, some empty), and blocks of several 256 KiB pieces.
    job = on_cluster("mpirun $CLUSTER_MPIRUN_ARGS -np %d -H \"$(echo $CLUSTER_HOSTS | sed \"s/,/:%d,/g\"):%d\" "
                     "--map-by slot -x TEST_MPI_THREAD_LEVEL=%s %s --gtest_filter=Allreduce.Hierarchical*"
                     % (3 * per_host, per_host, per_host, thread_level, BUILD / "tests" / "kolo_mpi_tests"), hosts=3)
    assert job.returncode == 0, job.stdout[-4000:] + job.stderr[-4000:]
    assert "[  PASSED  ]" in job.stdout and "FAILED" not in job.stdout


def test_the_gpu_path_through_the_host_double_is_exact_across_hosts_hierarchical():
    # The GPU suite on the host double, 2 hosts x 2 ranks, every allreduce and allgather of GPU
    # tensors hierarchical: reduce-scatter inside the host, across hosts between ranks of one local
    # rank, allgather inside the host (and the allgather's three steps), each compared with the CPU
    # path in the same run.
    job = on_cluster("mpirun $CLUSTER_MPIRUN_ARGS -np 4 -H %s --map-by slot -x KOLO_HIERARCHICAL_ALLREDUCE=1 "
                     "-x KOLO_HIERARCHICAL_ALLGATHER=1 %s" % (HOSTS, BUILD / "tests" / "kolo_gpu_double_tests"))
    assert job.returncode == 0, job.stdout[-4000:] + job.stderr[-4000:]
    assert "[  PASSED  ]" in job.stdout and "FAILED" not in job.stdout


@pytest.mark.skipif(not (BUILD / "python" / "kolo").exists(), reason="kolo's Python package was not built")
def test_process_sets_across_hosts_hierarchical_inside_a_set():
    # kolo.torch's process-set suite on 2 hosts x 3 ranks with hierarchical allreduce and allgather:
    # sets inside one host, sets across both, and one with 2 ranks on each host whose allreduce runs
    # hierarchically inside the set (its timeline says so).
    hosts = '"$(echo $CLUSTER_HOSTS | sed "s/,/:3,/g"):3"'
    job = on_cluster("mpirun $CLUSTER_MPIRUN_ARGS -np 6 -H %s --map-by slot -x PYTHONPATH -x KOLO_HIERARCHICAL_ALLREDUCE=1 "
                     "-x KOLO_HIERARCHICAL_ALLGATHER=1 %s -m pytest -q -p no:cacheprovider -o timeout=120 %s"
                     % (hosts, sys.executable, ROOT / "tests" / "bindings" / "torch" / "test_torch_process_sets.py"),
                     env=dict(os.environ, PYTHONPATH=str(BUILD / "python")))
    assert job.returncode == 0, job.stdout[-4000:] + job.stderr[-4000:]
    assert " passed" in job.stdout and "failed" not in job.stdout and "skipped" not in job.stdout, job.stdout[-2000:]


@pytest.mark.skipif(not (BUILD / "python" / "kolo").exists(), reason="kolo's Python package was not built")
def test_kolo_opens_only_the_doorbell_bound_to_the_jobs_subnet():
    # Every IP socket each rank holds (tests/system/cluster/own_sockets.py reads them from /proc): Open MPI's
    # own are TCP; kolo's one is the doorbell (docs/faults-and-security.md), a UDP socket on the rank's address
    # in the subnet MPI's traffic is pinned to, never on every interface (0.0.0.0) as before issue 55.
    command = ("%s -np 4 -H %s --rsh-agent $CLUSTER_AGENT --network-interface $CLUSTER_SUBNET %s %s"
               % (BUILD / "bin" / "kolorun", HOSTS, sys.executable, HERE / "own_sockets.py"))
    job = on_cluster(command + '; echo "subnet $CLUSTER_SUBNET"', env=dict(os.environ, PYTHONPATH=str(BUILD / "python")))
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    prefix = re.search(r"^subnet (\d+\.\d+\.\d+)\.0/24$", job.stdout, re.M).group(1) + "."
    udp = {}
    for rank, address in re.findall(r"rank (\d) socket udp6? (\S+) ", job.stdout):
        udp.setdefault(int(rank), []).append(address)
    assert sorted(udp) == [0, 1, 2, 3], job.stdout
    for rank, addresses in udp.items():
        assert len(addresses) == 1 and addresses[0].startswith(prefix), (rank, addresses, job.stdout)
    # Both ranks of a host bind that host's address, each on a port of its own.
    assert udp[0][0].split(":")[0] == udp[1][0].split(":")[0] != udp[2][0].split(":")[0] == udp[3][0].split(":")[0]


@pytest.mark.skipif(not (BUILD / "python" / "kolo").exists(), reason="kolo's Python package was not built")
def test_the_pytorch_example_trains_across_hosts_with_kolorun():
    command = ("%s -np 4 -H %s --rsh-agent $CLUSTER_AGENT --network-interface $CLUSTER_SUBNET "
               "--hierarchical-allreduce %s %s"
               % (BUILD / "bin" / "kolorun", HOSTS, sys.executable, ROOT / "examples" / "pytorch" / "digits_kolo.py"))
    job = on_cluster(command, env=dict(os.environ, PYTHONPATH=str(BUILD / "python")))
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    accuracy = float(job.stdout.strip().splitlines()[-1].rsplit(" ", 1)[1])
    assert accuracy >= 0.96, job.stdout  # as on one host: the global batch is the same


def test_kolorun_forwards_the_launching_environment_to_every_host(tmp_path):
    # cluster.sh's agent starts a host's processes in a fresh login's environment, as ssh does: plain mpirun
    # leaves WANDB_API_KEY behind; kolorun forwards it (and -x sets HF_HOME), but not this login's
    # SSH_CONNECTION.
    show = tmp_path / "show.sh"
    show.write_text('echo "${OMPI_COMM_WORLD_RANK} $(hostname | sed s/.*-//) ${WANDB_API_KEY:-unset} '
                    '${SSH_CONNECTION:-unset} ${HF_HOME:-unset}"\n')
    command = ('mpirun $CLUSTER_MPIRUN_ARGS -np 2 -H "$(echo $CLUSTER_HOSTS | sed "s/,/:1,/g"):1" sh %s; '
               '%s -np 4 -H %s --rsh-agent $CLUSTER_AGENT --network-interface $CLUSTER_SUBNET -x HF_HOME=/data/hf sh %s'
               % (show, BUILD / "bin" / "kolorun", HOSTS, show))
    job = on_cluster(command, timeout=120,
                     env=dict(os.environ, WANDB_API_KEY="k-123", SSH_CONNECTION="10.9.9.9 50000 10.9.9.8 22"))
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    lines = job.stdout.strip().splitlines()
    assert sorted(lines[:2]) == ["0 1 unset unset unset", "1 2 unset unset unset"], job.stdout
    assert sorted(lines[2:]) == ["0 1 k-123 unset /data/hf", "1 1 k-123 unset /data/hf", "2 2 k-123 unset /data/hf",
                                 "3 2 k-123 unset /data/hf"], job.stdout


# Training on 2 hosts x 2 ranks in which rank 3 (on the second host) meets `fate` (a Python statement)
# at step 20. Every rank records its pid; what a rank's ops fail with is printed, and it exits 3.
FAULT_TRAINING = """
import os, signal, subprocess, sys, time, torch
import kolo.torch as kolo
kolo.init()
open(os.path.join(sys.argv[1], 'pid.%d' % kolo.rank()), 'w').write(str(os.getpid()))
try:
    for step in range(100000):
        if step == 20 and kolo.rank() == 3:
            FATE
        kolo.allreduce(torch.ones(ELEMENTS), name='grad')
        time.sleep(0.01)
except kolo.KoloError as e:
    print('rank %d at %.1f: %s' % (kolo.rank(), time.time(), e), flush=True)
    sys.exit(3)
"""


def run_fault(tmp_path, fate, elements=1000, **env_vars):
    """The job's result and how long it took to end; checks that it failed and that no rank outlived it.
    Each step allreduces `elements` float32."""
    script = tmp_path / "train.py"
    script.write_text(FAULT_TRAINING.replace("FATE", fate).replace("ELEMENTS", str(elements)))
    command = ("%s -np 4 -H %s --rsh-agent $CLUSTER_AGENT --network-interface $CLUSTER_SUBNET %s %s %s"
               % (BUILD / "bin" / "kolorun", HOSTS, sys.executable, script, tmp_path))
    start = time.monotonic()
    job = on_cluster(command, env=dict(os.environ, PYTHONPATH=str(BUILD / "python"), **env_vars))
    elapsed = time.monotonic() - start
    assert job.returncode != 0
    pids = [int(p.read_text()) for p in tmp_path.glob("pid.*")]
    assert len(pids) == 4
    assert not [p for p in pids if running(p)], "a rank outlived the job"
    return job, elapsed


@pytest.mark.skipif(not (BUILD / "python" / "kolo").exists(), reason="kolo's Python package was not built")
def test_a_rank_killed_on_one_host_ends_the_job_on_every_host(tmp_path):
    job, elapsed = run_fault(tmp_path, "os.kill(os.getpid(), signal.SIGKILL)")
    assert elapsed < 90, "the job took %.0f s to end" % elapsed
    assert re.search(r"process rank 3 with PID \d+ on node \S+-2 exited on signal 9 \(Killed\)", job.stderr), job.stderr


@pytest.mark.skipif(not (BUILD / "python" / "kolo").exists(), reason="kolo's Python package was not built")
@pytest.mark.parametrize("elements,delay", [(1000, 0), (25000000, 0.05)])
def test_a_host_whose_link_goes_down_is_named_by_the_others_within_the_peer_timeout(tmp_path, elements, delay):
    # Rank 3 takes its host's link down for 10 s: both processes there live on, but nothing reaches
    # them and nothing leaves. MPI's TCP would wait out the outage; kolo's peer watch (3 s here) fails
    # the ops on the first host naming a rank of the second, and the job ends. A small op goes flat;
    # 100 MB go hierarchical, 25 segments whose blocks cross in pieces, the link going down 50 ms into
    # the step.
    fate = "subprocess.Popen(['sh', '-c', 'sleep %g; ip link set eth0 down; sleep 10; ip link set eth0 up'])" % delay
    job, elapsed = run_fault(tmp_path, fate, elements, KOLO_PEER_TIMEOUT_SECONDS="3")
    assert elapsed < 120, "the job took %.0f s to end" % elapsed
    for r in (0, 1):
        assert re.search(r"rank %d at [\d.]+: tensor 'grad' did not run: kolo stopped on rank %d: rank [23] \(host "
                         r"\S+-2\) sent no heartbeat for 3\.\d s" % (r, r), job.stdout), job.stdout + job.stderr[-3000:]


def run_elastic_on_three_hosts(tmp_path, event, **env_vars):
    """elastic_digits.py under kolorun on 3 emulated hosts x 1 rank, commits in each host's own
    /dev/shm; `event` (ELASTIC_TEST_EVENT) happens to the first host at step 10, which then leaves the
    discovery script's list. Returns the job and the weights file."""
    sys.path.insert(0, str(ROOT / "tests" / "system" / "elastic"))
    import test_elastic as elastic
    hosts_file = tmp_path / "hosts"
    script = tmp_path / "discover.sh"
    script.write_text("#!/bin/sh\ncat %s\n" % hosts_file)
    script.chmod(0o755)
    out = tmp_path / "weights.pt"
    command = (
        'echo $CLUSTER_HOSTS | tr , "\\n" | sed "s/$/:1/" > {hosts}; '
        'export ELASTIC_TEST_HOSTS_AFTER="$(echo $CLUSTER_HOSTS | cut -d, -f2,3 | sed "s/,/:1,/"):1"; '
        '{kolorun} --min-np 2 --host-discovery-script {script} --reset-limit 1 --rsh-agent $CLUSTER_AGENT '
        '--network-interface $CLUSTER_SUBNET -x ELASTIC_TEST_EVENT -x ELASTIC_TEST_HOSTS_FILE '
        '-x ELASTIC_TEST_HOSTS_AFTER '
        '{python} {program} --epochs {epochs} --batch-size {batch} --commit-every {every} --lr {lr} --out {out}'
        .format(hosts=hosts_file, kolorun=BUILD / "bin" / "kolorun", script=script, python=sys.executable,
                program=elastic.PROGRAM, epochs=elastic.EPOCHS, batch=elastic.BATCH, every=elastic.COMMIT_EVERY,
                lr=elastic.LR, out=out))
    job = on_cluster(command, hosts=3, env=dict(os.environ, PYTHONPATH=str(BUILD / "python"), ELASTIC_TEST_EVENT=event,
                                                ELASTIC_TEST_HOSTS_FILE=str(hosts_file), **env_vars))
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    # The job's new rank 0, on the second host, resumes from the commit of step 8 kept there, and the
    # job ends as the one-process reference that follows the same schedule.
    assert "attempt 1 on 2 ranks resumes from commit 1 (kept on rank 0's host)" in job.stderr, job.stderr[-3000:]
    assert "attempt 1 starts at step 8 on 2 ranks" in job.stdout
    weights, accuracy = elastic.reference([(8, 3), (None, 2)])
    elastic.assert_same_weights(out, weights)
    assert accuracy >= 0.96
    return job


@pytest.mark.skipif(not (BUILD / "python" / "kolo").exists(), reason="kolo's Python package was not built")
def test_elastic_training_loses_a_host_and_resumes_from_the_commit_kept_on_another(tmp_path):
    run_elastic_on_three_hosts(tmp_path, "0:0:10:die")


@pytest.mark.skipif(not (BUILD / "python" / "kolo").exists(), reason="kolo's Python package was not built")
def test_elastic_training_goes_on_without_a_host_whose_link_is_cut(tmp_path):
    # The first host's processes live on, unreachable: the others' peer watch (3 s) ends the attempt.
    job = run_elastic_on_three_hosts(tmp_path, "0:0:10:cut", KOLO_PEER_TIMEOUT_SECONDS="3")
    assert "sent no heartbeat" in job.stdout + job.stderr


def test_cluster_is_torn_down_after_a_failing_command():
    job = on_cluster("echo $CLUSTER_HOSTS; exit 5")
    assert job.returncode == 5
    names = job.stdout.strip().split(",")
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(n in listed for n in names)
    assert not any(n in open("/etc/hosts").read() for n in names)


def test_a_cluster_passes_over_the_names_a_killed_run_left_behind():
    # What a run killed by SIGKILL leaves (a bridge, a namespace) holds its id; the next run that draws that id
    # takes the next free one, and leaves the remains alone. CI once failed on such a collision.
    left = 117
    subprocess.run(["ip", "link", "add", "kc%dbr" % left, "type", "bridge"], check=True)
    subprocess.run(["ip", "netns", "add", "kc%d-1" % (left + 1)], check=True)
    try:
        job = on_cluster("echo $CLUSTER_HOSTS $CLUSTER_SUBNET", env=dict(os.environ, CLUSTER_FIRST_ID=str(left)))
        assert job.returncode == 0, job.stderr
        assert job.stdout.split() == ["kc%d-1,kc%d-2" % (left + 2, left + 2), "10.231.%d.0/24" % (left + 2)]
        assert "kc%dbr" % left in subprocess.run(["ip", "link", "show"], capture_output=True, text=True).stdout
        assert "kc%d-1" % (left + 1) in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    finally:
        subprocess.run(["ip", "link", "del", "kc%dbr" % left])
        subprocess.run(["ip", "netns", "del", "kc%d-1" % (left + 1)])


def test_a_command_past_its_timeout_is_ended_with_its_hosts_torn_down():
    # A test's timeout ends the run with SIGTERM, which cluster.sh traps, not with subprocess.run's SIGKILL, which
    # left the namespaces and every process on the hosts behind.
    with pytest.raises(subprocess.TimeoutExpired) as late:
        on_hosts(["sh", "-c", 'echo "$CLUSTER_HOSTS"; $CLUSTER_AGENT "${CLUSTER_HOSTS%%,*}" sleep 3171 & sleep 3171'],
                 hosts=2, timeout=5)
    names = late.value.output.strip().split(",")
    assert len(names) == 2, late.value.output
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not any(n in listed for n in names)
    assert not any(n in open("/etc/hosts").read() for n in names)
    sleepers = pids_whose_command_line(lambda line: line.split(b"\0")[:2] == [b"sleep", b"3171"])
    assert [pid for pid in sleepers if running(pid)] == []
