"""What the cluster tests ask of a process by its pid (shared by test_cluster.py and test_slurm.py)."""
import time
from pathlib import Path


def pids_whose_command_line(test):
    """The pids of this machine's processes whose command line (its bytes, NUL between arguments) passes `test`."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if test(cmdline.read_bytes()):
                found.append(int(cmdline.parent.name))
        except OSError:
            pass
    return found


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
