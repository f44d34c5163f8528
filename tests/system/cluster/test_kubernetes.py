"""The Kubernetes recipes of docs/kubernetes.md, each manifest's contract reproduced on emulated hosts
(tests/system/cluster/cluster.sh), one host per pod; no Kubernetes cluster runs here.

Each test reads its manifest under examples/kubernetes/ and runs the command and env of its containers as
written, with these substitutions, and only these:
- /workspace (the image's WORKDIR, where containers/cpu.Dockerfile copies examples/) is this repository;
- the operator's hostfile (/etc/mpi/hostfile) is written under the test's directory, and
  OMPI_MCA_orte_default_hostfile names it there; its lines name the emulated hosts, as the operator's
  name the worker pods;
- ssh is a stand-in on the launcher's PATH that hands the host and command to cluster.sh's agent (the
  operator's ssh to the workers' sshd); the workers' command (sshd) is not run;
- pod 0's name through the headless Service (train-0.train, trainrun-0.trainrun) is the first emulated
  host's name; $(NAME) in a command is expanded from the container's env, as Kubernetes does;
- a volume's mount path (/checkpoints) is a folder under the test's directory, which every host sees; the
  kubelet restarting a failed container (restartPolicy OnFailure) is the test running its command again;
- torchrun is a torch 2.x's from PyPI (KOLO_TORCHRUN, else tests/torch2.sh's .venv-torch2; CI runs this case
  from tests/torch2.sh), as the image's is; without one its test is skipped, saying so;
- kolo is the build's (PATH, PYTHONPATH), not an image's install; the image's ENV (containers/cpu.Dockerfile) is set.

Run by ctest (cluster_kubernetes), or as root: KOLO_BUILD_DIR=build python3 -m pytest tests/system/cluster/test_kubernetes.py
"""
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from emulated_hosts import on_hosts

yaml = pytest.importorskip("yaml", reason="PyYAML is not installed (apt-get install python3-yaml)")

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
BUILD = Path(os.environ.get("KOLO_BUILD_DIR", ROOT / "build")).resolve()
MANIFESTS = ROOT / "examples" / "kubernetes"
PAGE = ROOT / "docs" / "kubernetes.md"

# What containers/cpu.Dockerfile's image sets for every process (ENV).
IMAGE_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
             "OMPI_MCA_btl_vader_single_copy_mechanism": "none"}

# The stand-in for ssh on the MPIJob's launcher: ssh's options (those that take a value, with it) are
# dropped, then the host and the command go to cluster.sh's agent (@AGENT@), as ssh takes them to sshd.
SSH_STAND_IN = """#!/bin/sh
while [ $# -gt 0 ]; do
  case "$1" in
    -[bcDEeFIiJLlmOopQRSWw]) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
echo "$1" >> "$(dirname "$0")/ssh.log"
exec @AGENT@ "$@"
"""


def needs_cluster():
    if os.geteuid() != 0:
        pytest.skip("emulated hosts need root (network namespaces)")
    if shutil.which("ip") is None or shutil.which("unshare") is None:
        pytest.skip("emulated hosts need iproute2's ip and util-linux's unshare")
    if not (BUILD / "python" / "kolo").exists():
        pytest.skip("kolo's Python package was not built")
    if importlib.util.find_spec("sklearn") is None:
        pytest.skip("the example needs scikit-learn")


def on_cluster(shell_command, hosts, timeout=240):
    """Runs a shell command with `hosts` emulated hosts up (cluster.sh's variables set), then tears them down."""
    return on_hosts(["sh", "-c", shell_command], hosts, timeout)


def documents(name):
    with open(MANIFESTS / name) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def container(pod_template):
    containers = pod_template["spec"]["containers"]
    assert len(containers) == 1, "one container per pod"
    return containers[0]


def command_of(c):
    """The container's command line: command then args, as Kubernetes runs them (no shell)."""
    return list(c.get("command", [])) + list(c.get("args", []))


INDEX_FIELD = "metadata.annotations['batch.kubernetes.io/job-completion-index']"


def env_of(c, index=None):
    """The container's env: literal values, and the pod's `index` where the downward API names it."""
    env = {}
    for e in c.get("env", []):
        if "value" in e:
            env[e["name"]] = str(e["value"])
        else:
            assert e["valueFrom"]["fieldRef"]["fieldPath"] == INDEX_FIELD, e
            assert index is not None, "%s is the pod's index" % e["name"]
            env[e["name"]] = str(index)
    return env


def expand(words, env):
    """Kubernetes' $(NAME) in command and args: the value of the container's env NAME."""
    return [re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", lambda m: env.get(m.group(1), m.group(0)), w) for w in words]


def on_host(command, env, workspace=ROOT, programs=None, mounts=None):
    """A pod's process on an emulated host: `command` (a list, /workspace and the `mounts` {path in the pod:
    folder here} mapped, $(NAME) expanded, a first word in `programs` replaced by its path here) with `env` and
    the image's, kolo from the build."""
    words = [w.replace("/workspace", str(workspace)) for w in expand(command, env)]
    for path, folder in (mounts or {}).items():
        words = [w.replace(path, str(folder)) for w in words]
    words[0] = (programs or {}).get(words[0], words[0])
    env = dict(IMAGE_ENV, **env)
    env["PATH"] = "%s:%s" % (BUILD / "bin", env.get("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"))
    env["PYTHONPATH"] = str(BUILD / "python")
    return "cd %s && env %s %s" % (shlex.quote(str(workspace)), " ".join(shlex.quote("%s=%s" % kv) for kv in sorted(env.items())),
                                   " ".join(shlex.quote(w) for w in words))


def last_accuracy(stdout):
    lines = [l for l in stdout.splitlines() if "test accuracy" in l]
    assert lines, stdout
    return float(lines[-1].rsplit(" ", 1)[1])


_reference = []


def assert_trained_to_the_reference(stdout):
    """The job's last test accuracy is the one-process run's (examples/pytorch/digits.py, the same global
    batch and schedule), to 0.01, and at least 0.96, as test_cluster.py's training checks."""
    if not _reference:
        run = subprocess.run([sys.executable, str(ROOT / "examples" / "pytorch" / "digits.py")], capture_output=True,
                             text=True, timeout=120)
        assert run.returncode == 0, run.stderr[-3000:]
        _reference.append(last_accuracy(run.stdout))
    accuracy = last_accuracy(stdout)
    assert abs(accuracy - _reference[0]) <= 0.01 and accuracy >= 0.96, (accuracy, _reference[0], stdout)


def test_the_page_shows_each_manifest_as_it_is_in_the_repository():
    page = PAGE.read_text()
    for manifest in sorted(MANIFESTS.glob("*.yaml")):
        assert manifest.read_text() in page, "docs/kubernetes.md does not show %s as it is" % manifest.name


# --- Recipe 1: Kubeflow's MPI Operator ---------------------------------------------------------------------

def mpijob():
    (job,) = documents("mpijob.yaml")
    assert (job["apiVersion"], job["kind"]) == ("kubeflow.org/v2beta1", "MPIJob")
    specs = job["spec"]["mpiReplicaSpecs"]
    launcher, worker = container(specs["Launcher"]["template"]), container(specs["Worker"]["template"])
    return job, launcher, worker, specs["Worker"]["replicas"], job["spec"]["slotsPerWorker"]


def launcher_env(hostfile, slots):
    """What the MPI Operator (v2beta1) sets in the launcher's container for Open MPI."""
    return {"OMPI_MCA_orte_default_hostfile": str(hostfile), "OMPI_MCA_orte_keep_fqdn_hostnames": "true",
            "OMPI_MCA_orte_set_default_slots": str(slots), "OMPI_MCA_plm_rsh_args": "-o ConnectionAttempts=10",
            "K_MPI_JOB_ROLE": "launcher"}


def run_mpijob(tmp_path, hostfile_lines):
    """The MPIJob on 1 + workers emulated hosts: the launcher's command on the first, with the operator's env
    and hostfile (`hostfile_lines(worker_hosts, slots)`), mpirun reaching the others through the ssh stand-in."""
    job, launcher, worker, workers, slots = mpijob()
    hostfile = tmp_path / "etc" / "mpi" / "hostfile"
    hostfile.parent.mkdir(parents=True)
    stand_in = tmp_path / "bin"
    stand_in.mkdir()
    env = dict(env_of(launcher), **launcher_env(hostfile, slots))
    env["PATH"] = "%s:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" % stand_in
    script = (
        'workers=$(echo $CLUSTER_HOSTS | cut -d, -f2-); launcher=$(echo $CLUSTER_HOSTS | cut -d, -f1)\n'
        'sed "s|@AGENT@|$CLUSTER_AGENT|" > {ssh} <<\'EOF\'\n{stand_in}EOF\nchmod +x {ssh}\n'
        '{write_hostfile}\n'
        'echo "workers $workers"; $CLUSTER_AGENT $launcher {command}\n'
        .format(ssh=stand_in / "ssh", stand_in=SSH_STAND_IN, write_hostfile=hostfile_lines(hostfile, slots),
                command=shlex.quote(on_host(command_of(launcher), env))))
    return on_cluster(script, hosts=1 + workers), launcher, worker, workers, slots


def test_the_mpijob_launcher_command_trains_on_the_workers_named_by_the_operators_hostfile(tmp_path):
    needs_cluster()
    write = 'for h in $(echo $workers | tr , " "); do echo "$h slots={slots}"; done > {hostfile}'
    job, launcher, worker, workers, slots = run_mpijob(
        tmp_path, lambda hostfile, slots: write.format(slots=slots, hostfile=hostfile))
    # The manifest's contract: the launcher runs kolorun with no hosts or process count (the hostfile's),
    # the workers sshd, 2 x 2 slots.
    assert command_of(launcher) == ["kolorun", "python3", "/workspace/examples/pytorch/digits_kolo.py"]
    assert command_of(worker)[0] == "/usr/sbin/sshd"
    assert (workers, slots) == (2, 2)
    assert job.returncode == 0, job.stdout[-3000:] + job.stderr[-3000:]
    assert_trained_to_the_reference(job.stdout)
    assert job.stdout.count("epoch  1 ") == 1, job.stdout  # rank 0 alone prints
    # mpirun reached both workers, and only them (kolorun's check and mpirun's daemons went through ssh).
    assert set((tmp_path / "bin" / "ssh.log").read_text().split()) == set(worker_hosts(job.stdout)), job.stdout


def worker_hosts(stdout):
    return stdout.split("workers ", 1)[1].split()[0].split(",")


@pytest.mark.parametrize("slots", ["0", "two"])
def test_a_bad_operator_hostfile_fails_kolorun_naming_the_file_and_host(tmp_path, slots):
    # The first worker's line has 0 slots, or slots that are no number.
    needs_cluster()
    write = ('w1=$(echo $workers | cut -d, -f1); w2=$(echo $workers | cut -d, -f2); '
             '{{ echo "$w1 slots=%s"; echo "$w2 slots={slots}"; }} > {hostfile}' % slots)
    job, *_ = run_mpijob(tmp_path, lambda hostfile, n: write.format(hostfile=hostfile, slots=n))
    assert job.returncode != 0, job.stdout[-3000:] + job.stderr[-3000:]
    errors = [l for l in job.stdout.splitlines() + job.stderr.splitlines() if "OMPI_MCA_orte_default_hostfile" in l]
    assert errors and worker_hosts(job.stdout)[0] in errors[0], job.stdout[-3000:] + job.stderr[-3000:]
    assert str(tmp_path / "etc" / "mpi" / "hostfile") in errors[0]
    assert "test accuracy" not in job.stdout
    assert not (tmp_path / "bin" / "ssh.log").exists()  # refused before reaching any worker


# --- Recipe 2: an indexed Job and a headless Service -------------------------------------------------------

def indexed_job(name="indexed-job.yaml"):
    service, job = documents(name)
    assert (service["kind"], service["spec"]["clusterIP"]) == ("Service", "None")
    assert (job["apiVersion"], job["kind"], job["spec"]["completionMode"]) == ("batch/v1", "Job", "Indexed")
    template = job["spec"]["template"]
    # The pods' names through the Service: <job>-<index>.<subdomain>, the Service's name.
    assert template["spec"]["subdomain"] == service["metadata"]["name"]
    return job, container(template)


def pod_lines(job, c, pods, env_changes=None, programs=None):
    """Shell lines that run the Job's pods, pod i on emulated host i+1 with JOB_COMPLETION_INDEX=i (as
    Kubernetes sets it) and the manifest's env; pod 0's name through the Service (<job>-0.<subdomain>) is
    host 1's. `env_changes` per index. Their output follows, pod by pod; the status says which pods failed."""
    pod_0 = "%s-0.%s" % (job["metadata"]["name"], job["spec"]["template"]["spec"]["subdomain"])
    lines = ['first=$(echo $CLUSTER_HOSTS | cut -d, -f1)']
    for i in range(pods):
        pod_env = dict(env_of(c, i), JOB_COMPLETION_INDEX=str(i))
        pod_env.update((env_changes or {}).get(i, {}))
        words = [w.replace(pod_0, "@FIRST@") for w in command_of(c)]
        pod_env = {k: v.replace(pod_0, "@FIRST@") for k, v in pod_env.items()}
        command = 'printf %%s %s | sed "s/@FIRST@/$first/g"' % shlex.quote(on_host(words, pod_env, programs=programs))
        lines.append('$CLUSTER_AGENT $(echo $CLUSTER_HOSTS | cut -d, -f%d) "$(%s)" > pod%d.out 2>&1 & p%d=$!'
                     % (i + 1, command, i, i))
    lines.append("status=0; " + " ".join("wait $p%d || status=$((status + %d));" % (i, 1 << i) for i in range(pods)))
    lines.append("for i in $(seq 0 %d); do echo \"== pod $i\"; cat pod$i.out; done; exit $status" % (pods - 1))
    return lines


def run_indexed_job(pods, env_changes=None):
    job, c = indexed_job()
    assert env_of(c)["MASTER_ADDR"] == "%s-0.%s" % (job["metadata"]["name"], job["spec"]["template"]["spec"]["subdomain"])
    return job, c, pod_lines(job, c, pods, env_changes)


def test_the_indexed_jobs_pods_train_in_a_gloo_world(tmp_path):
    needs_cluster()
    job, c, lines = run_indexed_job(2)
    pods = job["spec"]["completions"]
    assert pods == job["spec"]["parallelism"] == int(env_of(c)["WORLD_SIZE"]) == 2
    assert command_of(c) == ["python3", "/workspace/examples/pytorch/digits_kolo.py"]
    assert "RANK" not in env_of(c)  # the rank is the pod's index
    run = on_cluster("cd %s && %s" % (tmp_path, "\n".join(lines)), hosts=pods)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert_trained_to_the_reference(run.stdout)
    assert run.stdout.count("epoch  1 ") == 1, run.stdout  # rank 0 alone prints


def test_a_pod_whose_rank_is_out_of_the_world_fails_naming_both(tmp_path):
    # A Job of more completions than WORLD_SIZE: its pod of index 2 (here given as RANK) is refused at once.
    needs_cluster()
    job, c, lines = run_indexed_job(1, {0: {"RANK": "2"}})
    run = on_cluster("cd %s && %s" % (tmp_path, "\n".join(lines)), hosts=1, timeout=120)
    assert run.returncode != 0
    assert "RANK=2 is not a rank of WORLD_SIZE=2" in run.stdout, run.stdout[-3000:]


def test_a_pod_whose_index_is_out_of_the_world_fails_naming_both(tmp_path):
    needs_cluster()
    job, c, lines = run_indexed_job(1, {0: {"JOB_COMPLETION_INDEX": "2"}})
    run = on_cluster("cd %s && %s" % (tmp_path, "\n".join(lines)), hosts=1, timeout=120)
    assert run.returncode != 0
    assert "JOB_COMPLETION_INDEX=2" in run.stdout and "WORLD_SIZE=2" in run.stdout, run.stdout[-3000:]


# --- Recipe 3: torchrun in each pod of an indexed Job ------------------------------------------------------

# torchrun of a torch 2.x (torch 1.13's does not run under Python 3.11), as the image's torch is.
TORCHRUN = Path(os.environ.get("KOLO_TORCHRUN") or next(
    (p for p in (ROOT / ".venv-torch2" / "bin" / "torchrun",) if p.exists()),
    ROOT / ".venv-torch2" / "bin" / "torchrun"))


def needs_torchrun():
    needs_cluster()
    if not TORCHRUN.exists():
        pytest.skip("no torchrun of torch 2.x at %s (set KOLO_TORCHRUN, or run tests/torch2.sh)" % TORCHRUN)


def test_torchrun_in_each_pod_trains_in_a_gloo_world(tmp_path):
    needs_torchrun()
    job, c = indexed_job("torchrun-job.yaml")
    pods = job["spec"]["completions"]
    assert pods == job["spec"]["parallelism"] == 2
    command = command_of(c)
    assert command[0] == "torchrun" and "--nnodes=2" in command and "--nproc-per-node=2" in command
    assert "--node-rank=$(JOB_COMPLETION_INDEX)" in command
    assert "--master-addr=%s-0.%s" % (job["metadata"]["name"], job["spec"]["template"]["spec"]["subdomain"]) in command
    lines = pod_lines(job, c, pods, programs={"torchrun": str(TORCHRUN)})
    run = on_cluster("cd %s && %s" % (tmp_path, "\n".join(lines)), hosts=pods)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert_trained_to_the_reference(run.stdout)
    assert run.stdout.count("epoch  1 ") == 1, run.stdout  # rank 0 alone prints


# --- Recipe 4: elastic torchrun, a pod that restarts rejoins ------------------------------------------------

def test_a_pod_that_restarts_rejoins_the_elastic_torchrun_job_from_the_last_checkpoint(tmp_path):
    # Both pods train; once an epoch has ended, pod 1's container is killed (torchrun and its workers, at once);
    # 3 s later the kubelet starts it again. Pod 0's workers fail naming the lost ranks, its torchrun starts them
    # again and the restarted pod joins that rendezvous; the job resumes from the checkpoint on 4 ranks and ends
    # with the one-process run's accuracy.
    needs_torchrun()
    service, job = documents("torchrun-elastic-job.yaml")
    template = job["spec"]["template"]
    assert template["spec"]["restartPolicy"] == "OnFailure" and job["spec"]["completionMode"] == "Indexed"
    c = container(template)
    (mount,) = c["volumeMounts"]
    (volume,) = template["spec"]["volumes"]
    assert mount["name"] == volume["name"] and "persistentVolumeClaim" in volume
    command = command_of(c)
    assert command[:2] == ["torchrun", "--nnodes=1:2"] and "--max-restarts=3" in command
    pod_0 = "%s-0.%s" % (job["metadata"]["name"], template["spec"]["subdomain"])
    assert "--rdzv-endpoint=%s:29400" % pod_0 in command and service["metadata"]["name"] == template["spec"]["subdomain"]
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    words = [w.replace(pod_0, "@FIRST@") for w in command]
    # exec: the pid the agent's shell writes is the container's main process, torchrun.
    pod = shlex.quote(on_host(words, env_of(c), programs={"torchrun": str(TORCHRUN)},
                              mounts={mount["mountPath"]: checkpoints}).replace(" && env ", " && exec env ", 1))
    script = """
first=$(echo $CLUSTER_HOSTS | cut -d, -f1); second=$(echo $CLUSTER_HOSTS | cut -d, -f2)
pod() {  # INDEX HOST OUTPUT: the container's command on the host; its pid in OUTPUT.pid
  $CLUSTER_AGENT $2 "echo \\$\\$ > $3.pid; $(printf %%s %(pod)s | sed "s/@FIRST@/$first/g")" > $3 2>&1
}
tree() { echo $1; for child in $(pgrep -P $1); do tree $child; done; }
pod 0 $first pod0.out & p0=$!
sleep 1
pod 1 $second pod1.out & p1=$!
for i in $(seq 600); do grep -q "epoch  2 " pod0.out pod1.out 2>/dev/null && break; sleep 0.2; done
kill -9 $(tree $(cat pod1.out.pid)) 2>/dev/null; wait $p1
echo "== pod 1's container killed"
sleep 3
pod 1 $second pod1-restarted.out & p1=$!
status=0; wait $p0 || status=1; wait $p1 || status=$((status + 2))
for f in pod0.out pod1.out pod1-restarted.out; do echo "== $f"; cat $f; done; exit $status
""" % {"pod": pod}
    run = on_cluster("cd %s && %s" % (tmp_path, script), hosts=2, timeout=400)
    assert run.returncode == 0, run.stdout[-6000:] + run.stderr[-3000:]
    out = run.stdout
    assert "== pod 1's container killed" in out
    resumed = re.findall(r"resuming at epoch (\d+) from \S+ on (\d) ranks", out)
    assert resumed and int(resumed[-1][0]) >= 3 and resumed[-1][1] == "4", out[-6000:]
    assert_trained_to_the_reference(out)
    # Pod 0's ranks failed their step naming a rank of pod 1 (ranks 2-3, 2 per pod), and did not hang.
    pod_0_out = out.split("== pod0.out", 1)[1].split("== pod1.out", 1)[0]
    assert re.search(r"KoloError: .* from rank [23] \(host \S+\) failed", pod_0_out), pod_0_out[-4000:]
