"""kolorun in elastic mode on this machine, for the restart-path tests (test_elastic.py, test_jax_restart.py).

The job's slots ("localhost:N") come from a discovery script that prints tmp_path/hosts; a rank may
rewrite that file (ELASTIC_TEST_HOSTS_FILE) to take its slot away before it dies, or to add one. The
hosts keep their commits in tmp_path (KOLO_ELASTIC_COMMIT_DIR) rather than /dev/shm: a test can see
that they went at the end.
"""
import os
import subprocess
from pathlib import Path

BUILD = Path(os.environ.get("KOLO_BUILD_DIR", "build")).resolve()
KOLORUN = str(BUILD / "bin" / "kolorun")


def run_elastic_job(tmp_path, hosts, command, env=None, peer_timeout=30, timeout=240):
    """Runs `command` under kolorun (--min-np 2, --reset-limit 2) on `hosts` ("localhost:3") and waits
    for it; `env`: more variables for every rank. subprocess.run's result."""
    hosts_file = tmp_path / "hosts"
    hosts_file.write_text(hosts + "\n")
    script = tmp_path / "discover.sh"
    script.write_text("#!/bin/sh\ncat %s\n" % hosts_file)
    script.chmod(0o755)
    env = dict(env or {}, ELASTIC_TEST_HOSTS_FILE=str(hosts_file))
    forward = [word for name in sorted(env) for word in ("-x", name)]
    env.update(PYTHONPATH=str(BUILD / "python"), KOLO_ELASTIC_COMMIT_DIR=str(tmp_path),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               KOLO_PEER_TIMEOUT_SECONDS=str(peer_timeout))
    return subprocess.run([KOLORUN, "--min-np", "2", "--host-discovery-script", str(script), "--reset-limit", "2",
                           "--mpi-args", "--oversubscribe", *forward, *command],
                          capture_output=True, text=True, timeout=timeout, env=dict(os.environ, **env))
