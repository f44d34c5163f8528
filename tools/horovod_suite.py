"""Horovod's own PyTorch test suite against kolo, as an outside check: its test/parallel/test_torch.py
with `import horovod.torch as hvd` changed to `import kolo.torch as hvd`, each test alone under
mpirun, tallied. Nothing of Horovod's is kept in this repository: point --horovod at a checkout.

    git clone --depth 1 https://github.com/horovod/horovod /tmp/horovod
    python3 tools/horovod_suite.py --horovod /tmp/horovod [--np 2] [--build build] [-k allreduce]

The suite's helper module (test/utils/common.py) needs Horovod's runner; the three helpers the torch
suite uses are written here instead. Prints one line per test (PASS, FAIL with its first error
line, SKIP with the reason) and the totals.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile

SHIM = '''"""What test_torch.py takes from Horovod's test/utils/common.py, written for kolo's outside check."""
import contextlib
import os
import tempfile


def mpi_env_rank_and_size():
    for rank_var, size_var in (("PMI_RANK", "PMI_SIZE"), ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE")):
        if os.environ.get(rank_var) is not None and os.environ.get(size_var) is not None:
            return int(os.environ[rank_var]), int(os.environ[size_var])
    return 0, 1


def skip_or_fail_gpu_test(test, message):
    if int(os.environ.get("HOROVOD_TEST_GPU", 0)):
        test.fail(message)
    else:
        test.skipTest(message)


@contextlib.contextmanager
def temppath():
    with tempfile.TemporaryDirectory() as d:
        yield os.path.join(d, "temp_test_file")
'''


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--horovod", required=True, help="a checkout of horovod/horovod")
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    parser.add_argument("--timeout", type=int, default=120, help="seconds per test")
    parser.add_argument("-k", default="", help="only tests whose name contains this")
    parser.add_argument("--python", default=sys.executable)
    args = parser.parse_args()

    source = open(os.path.join(args.horovod, "test", "parallel", "test_torch.py")).read()
    if "import horovod.torch as hvd" not in source:
        sys.exit("test_torch.py does not import horovod.torch as hvd: not the suite this tool knows")
    work = tempfile.mkdtemp(prefix="kolo_horovod_suite_")
    os.makedirs(os.path.join(work, "parallel"))
    os.makedirs(os.path.join(work, "utils"))
    with open(os.path.join(work, "parallel", "test_torch.py"), "w") as f:
        f.write(source.replace("import horovod.torch as hvd", "import kolo.torch as hvd"))
    with open(os.path.join(work, "utils", "common.py"), "w") as f:
        f.write(SHIM)
    names = [n for n in re.findall(r"^    def (test_\w+)\(self", source, re.M) if args.k in n]

    env = dict(os.environ, PYTHONPATH=os.path.abspath(os.path.join(args.build, "python")),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    totals = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for name in names:
        command = ["mpirun", "-np", str(args.np), "--oversubscribe", args.python, "-m", "pytest", "-q", "-rs",
                   "--color=no", "-p", "no:cacheprovider", "-o", "timeout=%d" % args.timeout,
                   os.path.join(work, "parallel", "test_torch.py") + "::TorchTests::" + name]
        try:
            job = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout + 30, env=env)
            out = job.stdout + job.stderr
            if job.returncode == 0 and " passed" in out:
                verdict, detail = "PASS", ""
            elif job.returncode == 0 and " skipped" in out:
                reason = re.search(r"SKIPPED \[\d+\] [^:]+:\d+: (.*)", out)
                verdict, detail = "SKIP", reason.group(1) if reason else ""
            else:
                error = re.search(r"^E\s+(\S.*)$", out, re.M)
                verdict, detail = "FAIL", error.group(1) if error else out.strip().splitlines()[-1][:200]
        except subprocess.TimeoutExpired:
            verdict, detail = "FAIL", "timed out after %d s" % (args.timeout + 30)
        totals[verdict] += 1
        print("%-4s %s%s" % (verdict, name, "  " + detail[:200] if detail else ""), flush=True)
    print("# %d tests at %d ranks: %d pass, %d fail, %d skip" % (len(names), args.np, totals["PASS"],
                                                                 totals["FAIL"], totals["SKIP"]))


if __name__ == "__main__":
    main()
