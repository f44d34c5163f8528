"""kolo.run (Horovod's horovod.run) end to end: a caller's function on every rank of a kolorun job, its
results back by rank; and the service that carries them, alone.

Run by ctest (which sets KOLO_BUILD_DIR), or: KOLO_BUILD_DIR=build python3 -m pytest tests/system/launcher
"""
import os
import pickle
import socket
import subprocess
import sys
import textwrap

import pytest

from kolorun_cli import BUILD

pytestmark = pytest.mark.skipif(not (BUILD / "python" / "kolo").exists(), reason="kolo's Python package was not built")


def caller(tmp_path, body, timeout=120):
    """`body` run as a script's __main__, as a user's driver script or notebook is."""
    script = tmp_path / "driver.py"
    script.write_text(textwrap.dedent(body))
    env = dict(os.environ, PYTHONPATH=str(BUILD / "python"))
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=timeout, env=env,
                          cwd=str(tmp_path))


def test_a_horovod_run_script_ports_by_its_import(tmp_path):
    job = caller(tmp_path, """
        import kolo as horovod

        def train(scale, offset=0):
            import torch
            import kolo.torch as hvd
            hvd.init()
            total = hvd.allreduce(torch.tensor([float(hvd.rank() + 1)]), op=hvd.Sum)
            return hvd.rank(), hvd.size(), total.item() * scale + offset

        if __name__ == "__main__":
            print(horovod.run(train, args=(10,), kwargs={"offset": 1}, num_proc=2))
        """)
    assert job.returncode == 0, job.stdout + job.stderr
    assert job.stdout.splitlines()[-1] == "[(0, 2, 31.0), (1, 2, 31.0)]"
    assert "KOLO_RUN_SERVICE" not in job.stderr  # read elsewhere: no "not a kolo setting" warning


def test_a_function_that_raises_fails_the_call_naming_the_rank(tmp_path):
    job = caller(tmp_path, """
        import os
        import kolo

        def train():
            if os.environ["OMPI_COMM_WORLD_RANK"] == "1":
                raise ValueError("no data on this rank")
            return 0

        try:
            kolo.run(train, num_proc=2)
        except RuntimeError as e:
            print("raised:", e)
        """)
    assert job.returncode == 0, job.stdout + job.stderr
    assert ("raised: kolo.run: the job failed: kolorun exited with status 1 (its output above says why)"
            in job.stdout), job.stdout + job.stderr
    assert "kolo.run: rank 1's function raised:" in job.stderr, job.stderr
    assert "ValueError: no data on this rank" in job.stderr, job.stderr


def test_horovod_runs_argument_checks_and_kolorun_options(tmp_path):
    job = caller(tmp_path, """
        import warnings
        import kolo

        for kwargs in ({"hosts": "localhost:2", "hostfile": "h"}, {"use_gloo": True, "use_mpi": True}):
            try:
                kolo.run(print, **kwargs)
            except ValueError as e:
                print("refused:", e)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            print(kolo.run(abs, args=(-3,), np=2, hosts="localhost:2", use_mpi=True, disable_cache=True))
        print([str(w.message) for w in caught])
        """)
    assert job.returncode == 0, job.stdout + job.stderr
    assert job.stdout.splitlines() == ["refused: Argument hosts and hostfile only allow one provided.",
                                       "refused: Argument use_gloo and use_mpi only allow one set True.",
                                       "[3, 3]", "['np is deprecated, use num_proc instead']"]


def test_the_service_unpickles_nothing_without_the_token():
    sys.path.insert(0, str(BUILD / "python"))
    from kolo.runner import _service

    service = _service.Service(pickle.dumps("the function"))
    try:
        variable = service.environment()[_service.VARIABLE]
        port, token, addresses = variable.split(":", 2)
        assert addresses.split(",")[0] == "127.0.0.1" and len(token) == 32
        # Someone without the token: closed unread.
        with socket.create_connection(("127.0.0.1", int(port))) as intruder:
            intruder.sendall(b"x" * 32 + b"R" + b"\0" * 16 + b"\0\0\0\0\0\0\0\1" + b"!")
            try:
                closed = intruder.recv(1) == b""
            except ConnectionResetError:  # closed with what was sent still unread
                closed = True
            assert closed
        assert pickle.loads(_service.fetch_function(variable)) == "the function"
        _service.put_result(0, 1, pickle.dumps({"loss": 0.5}), variable)
        assert {k: pickle.loads(v) for k, v in service.results.items()} == {(0, 1): {"loss": 0.5}}
    finally:
        service.close()
