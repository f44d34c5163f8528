"""kolorun as the end-to-end tests run it (test_kolorun.py, test_kolorun_elastic.py): where the build put
it, a run of it, and a stand-in script for its --rsh-agent or --host-discovery-script."""
import os
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
BUILD = Path(os.environ.get("KOLO_BUILD_DIR", "build")).resolve()
KOLORUN = str(BUILD / "bin" / "kolorun")


def kolorun(*args, timeout=120, env=None, **kw):
    return subprocess.run([KOLORUN, *args], capture_output=True, text=True, timeout=timeout,
                          env=env if env is not None else os.environ.copy(), **kw)


def agent(tmp_path, body):
    script = tmp_path / "agent.sh"
    script.write_text("#!/bin/sh\n" + body + "\n")
    script.chmod(0o755)
    return str(script)
