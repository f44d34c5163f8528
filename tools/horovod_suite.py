"""Horovod's own PyTorch or TensorFlow test suite against kolo, as an outside check: its
test/parallel/test_torch.py (or test_tensorflow.py) with `import horovod.torch as hvd` changed to
`import kolo.torch as hvd` (or horovod.tensorflow to kolo.tensorflow), each test alone under mpirun,
tallied. Nothing of Horovod's is kept in this repository: point --horovod at a checkout.

    git clone --depth 1 https://github.com/horovod/horovod /tmp/horovod
    python3 tools/horovod_suite.py --horovod /tmp/horovod [--np 2] [--build build] [-k allreduce]
    python3 tools/horovod_suite.py --horovod /tmp/horovod --suite tensorflow --python .venv/bin/python

The suites' helper module (test/utils/common.py) needs Horovod's runner; the helpers they use are
written here instead, and so is the one function the TensorFlow suite takes from horovod.tensorflow.util.
Prints one line per test (PASS, FAIL with its first error line, SKIP with the reason) and the totals.
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


# What the TensorFlow suite imports from horovod.tensorflow.util (a TensorFlow query, nothing of Horovod's).
UTIL_SHIM = '''import tensorflow as tf


def _executing_eagerly():
    return tf.executing_eagerly()
'''

SUITES = {
    # suite: (its file, the files beside it that import Horovod, Horovod's module, kolo's)
    "torch": ("test_torch.py", [], "horovod.torch", "kolo.torch"),
    "tensorflow": ("test_tensorflow.py", ["base_test_tensorflow.py"], "horovod.tensorflow", "kolo.tensorflow"),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--horovod", required=True, help="a checkout of horovod/horovod")
    parser.add_argument("--np", type=int, default=2)
    parser.add_argument("--build", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"))
    parser.add_argument("--timeout", type=int, default=120, help="seconds per test")
    parser.add_argument("-k", default="", help="only tests whose name contains this")
    parser.add_argument("--python", default=sys.executable)
    parser.add_argument("--suite", choices=sorted(SUITES), default="torch")
    args = parser.parse_args()

    test_file, helpers, horovod_module, kolo_module = SUITES[args.suite]
    parallel = os.path.join(args.horovod, "test", "parallel")
    source = open(os.path.join(parallel, test_file)).read()
    if "import %s as hvd" % horovod_module not in source:
        sys.exit("%s does not import %s as hvd: not the suite this tool knows" % (test_file, horovod_module))
    work = tempfile.mkdtemp(prefix="kolo_horovod_suite_")
    os.makedirs(os.path.join(work, "parallel"))
    os.makedirs(os.path.join(work, "utils"))
    for name in [test_file] + helpers:
        text = open(os.path.join(parallel, name)).read()
        text = text.replace("import %s as hvd" % horovod_module, "import %s as hvd" % kolo_module)
        text = text.replace("from horovod.tensorflow.util import", "from horovod_util_shim import")
        with open(os.path.join(work, "parallel", name), "w") as f:
            f.write(text)
    with open(os.path.join(work, "utils", "common.py"), "w") as f:
        f.write(SHIM)
    with open(os.path.join(work, "parallel", "horovod_util_shim.py"), "w") as f:
        f.write(UTIL_SHIM)
    names = [n for n in re.findall(r"^    def (test_\w+)\(self", source, re.M) if args.k in n]
    test_class = re.search(r"^class (\w+)\(", source, re.M).group(1)

    env = dict(os.environ, PYTHONPATH=os.path.abspath(os.path.join(args.build, "python")),
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    totals = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    for name in names:
        command = ["mpirun", "-np", str(args.np), "--oversubscribe", args.python, "-m", "pytest", "-q", "-rs",
                   "--color=no", "-p", "no:cacheprovider", "-o", "timeout=%d" % args.timeout,
                   os.path.join(work, "parallel", test_file) + "::" + test_class + "::" + name]
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
