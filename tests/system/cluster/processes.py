"""What the cluster tests ask of a process by its pid (shared by test_cluster.py and test_slurm.py)."""
import time
from pathlib import Path


def running(pid, grace=5.0):
    """Whether a process still runs after a grace period; a killed one may linger a moment unreaped."""
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            state = Path("/proc/%d/stat" % pid).read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return False
        if state in ("Z", "X"):
            return False
        time.sleep(0.1)
    return True
