"""Before each test of the suite: no session directory of a dead Open MPI 5 mpirun or daemon (ompi.<pid>,
prted.<pid>) is left in /tmp. A test that kills mpirun leaves one, and the suite's plain mpirun jobs (not
kolorun's, which clears its own) fail at once when they get its pid (see test_stale_session_dir.py)."""
import os
import re
import shutil
import tempfile

import pytest

from in_place_job import running


@pytest.fixture(autouse=True)
def no_stale_session_dirs():
    top = tempfile.gettempdir()
    for name in os.listdir(top):
        m = re.fullmatch(r"(?:ompi|prted)\.(\d+)", name)
        path = os.path.join(top, name)
        if m and not running(int(m.group(1))) and os.stat(path).st_uid == os.getuid():
            shutil.rmtree(path, ignore_errors=True)
    yield
