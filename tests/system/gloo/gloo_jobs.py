"""Starting Gloo-world jobs for the tests: kolorun --gloo, or processes started by hand with the bare
launch's variables (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), each with a timeout so that a hang fails."""
import os
import socket
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
BUILD = Path(os.environ.get("KOLO_BUILD_DIR", ROOT / "build")).resolve()
KOLORUN = str(BUILD / "bin" / "kolorun")
PROGRAM = str(ROOT / "tests" / "system" / "elastic" / "elastic_digits.py")
MPI_VARIABLES = ("OMPI_", "PMIX_", "PMI_", "SLURM_")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(**extra):
    """This environment less every MPI launcher's variables, kolo's package on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(MPI_VARIABLES) and not k.startswith("KOLO_")}
    env["PYTHONPATH"] = str(BUILD / "python")
    env.update({k: str(v) for k, v in extra.items()})
    return env


def bare_launch(size, command, port=None, ranks=None, timeout=120, **env):
    """Starts `ranks` (default: all) of a job of `size` by hand; returns their CompletedProcess-like results."""
    port = port or free_port()
    procs = []
    for r in (range(size) if ranks is None else ranks):
        e = clean_env(RANK=r, WORLD_SIZE=size, LOCAL_RANK=r, LOCAL_WORLD_SIZE=size, MASTER_ADDR="127.0.0.1",
                      MASTER_PORT=port, **env)
        procs.append(subprocess.Popen(command, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    results = []
    for p in procs:
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            err += "\n(killed by the test's timeout)"
        results.append(subprocess.CompletedProcess(p.args, p.returncode, out, err))
    return results


def run_program(out, *args):
    return [sys.executable, PROGRAM, "--out", str(out)] + list(args)
