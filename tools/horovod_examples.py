"""Horovod's own example scripts against kolo, as an outside check of "a Horovod script ports by changing
the import, and its job line by changing the launcher's name": each script from a Horovod checkout with
only its Horovod imports changed (horovod.torch -> kolo.torch, horovod.tensorflow.keras -> kolo.keras,
horovod.tensorflow -> kolo.tensorflow, horovod -> kolo), started by kolorun with horovodrun's options
(-np 2; the elastic ones --min-np, --max-np and a --host-discovery-script), made small (few steps, small
models) to run on a CPU. The MNIST examples read a stand-in MNIST of random digits in the format torchvision reads (no
network here). Nothing of Horovod's is kept in this repository: point --horovod at a checkout.

    git clone --depth 1 https://github.com/horovod/horovod /tmp/horovod
    python3 tools/horovod_examples.py --horovod /tmp/horovod [--build build] [--tf-python .venv/bin/python] [-k mnist]
        [--gloo]    (the Gloo world: kolorun --gloo, as horovodrun --gloo)

Prints one line per example (PASS, or FAIL with the last lines of its output) and the totals; exits 1 if any
failed.
"""
import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

# What each example is run with: its path in Horovod's tree, the Python that has its framework ("torch":
# this one, "tf": --tf-python), kolorun's options, the script's own.
SMALL_TORCH = ["--no-cuda", "--model", "resnet18", "--batch-size", "4", "--num-warmup-batches", "1",
               "--num-batches-per-iter", "1", "--num-iters", "2"]
SMALL_TF = ["--no-cuda", "--model", "MobileNetV2", "--batch-size", "4", "--num-batches-per-iter", "1", "--num-iters",
            "2"]
# A failed attempt ends the run (elastic mode would restart it without end).
ELASTIC = ["--min-np", "2", "--max-np", "2", "--host-discovery-script", "{discover}", "--reset-limit", "0"]
EXAMPLES = [
    ("examples/pytorch/pytorch_synthetic_benchmark.py", "torch", ["-np", "2"], SMALL_TORCH),
    ("examples/pytorch/pytorch_synthetic_benchmark.py", "torch", ["-np", "2"], SMALL_TORCH + ["--fp16-allreduce"]),
    ("examples/pytorch/pytorch_synthetic_benchmark.py", "torch", ["-np", "2"], SMALL_TORCH + ["--use-adasum"]),
    ("examples/pytorch/pytorch_mnist.py", "torch", ["-np", "2"], ["--no-cuda", "--epochs", "1", "--data-dir", "{mnist}"]),
    ("examples/pytorch/pytorch_mnist.py", "torch", ["-np", "2"],
     ["--no-cuda", "--epochs", "1", "--data-dir", "{mnist}", "--use-adasum"]),
    ("examples/pytorch/pytorch_mnist.py", "torch", ["-np", "2"],
     ["--no-cuda", "--epochs", "1", "--data-dir", "{mnist}", "--fp16-allreduce", "--gradient-predivide-factor", "2"]),
    ("examples/elastic/pytorch/pytorch_synthetic_benchmark_elastic.py", "torch", ["-np", "2"] + ELASTIC, SMALL_TORCH),
    ("examples/elastic/pytorch/pytorch_mnist_elastic.py", "torch", ["-np", "2"] + ELASTIC,
     ["--no-cuda", "--epochs", "1", "--data-dir", "{mnist}"]),
    # Written for tf.keras 2: under Keras 3 these two fail whatever the library (docs/migrating-from-horovod.md);
    # with TF_USE_LEGACY_KERAS=1 and tf_keras installed, the first passes.
    ("examples/tensorflow2/tensorflow2_synthetic_benchmark.py", "tf", ["-np", "2"],
     SMALL_TF + ["--num-warmup-batches", "1"]),
    ("examples/tensorflow2/tensorflow2_keras_synthetic_benchmark.py", "tf", ["-np", "2"], SMALL_TF),
    ("examples/elastic/tensorflow2/tensorflow2_synthetic_benchmark_elastic.py", "tf", ["-np", "2"] + ELASTIC,
     SMALL_TF + ["--num-warmup-batches", "1"]),
]
IMPORTS = [(r"\bhorovod\.tensorflow\.keras\b", "kolo.keras"), (r"\bhorovod\.torch\b", "kolo.torch"),
           (r"\bhorovod\.tensorflow\b", "kolo.tensorflow"), (r"\bhorovod\.keras\b", "kolo.keras"),
           (r"^import horovod$", "import kolo as horovod")]


def ported(text):
    """The script with its Horovod imports changed, and how many lines that changed."""
    lines = text.split("\n")
    changed = 0
    for i, line in enumerate(lines):
        if not re.match(r"\s*(import|from)\s+horovod\b", line):
            continue
        for pattern, replacement in IMPORTS:
            line = re.sub(pattern, replacement, line)
        changed += line != lines[i]
        lines[i] = line
    return "\n".join(lines), changed


def stand_in_mnist(root):
    """Random 28x28 digits in MNIST's idx files, where torchvision's MNIST(root) finds them ready."""
    raw = Path(root) / "MNIST" / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    for prefix, n in (("train", 1200), ("t10k", 200)):
        images = rng.integers(0, 256, size=(n, 28, 28), dtype=np.uint8)
        labels = rng.integers(0, 10, size=n, dtype=np.uint8)
        (raw / ("%s-images-idx3-ubyte" % prefix)).write_bytes(
            np.array([2051, n, 28, 28], dtype=">i4").tobytes() + images.tobytes())
        (raw / ("%s-labels-idx1-ubyte" % prefix)).write_bytes(np.array([2049, n], dtype=">i4").tobytes() + labels.tobytes())


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--horovod", required=True, help="a Horovod checkout")
    parser.add_argument("--build", default="build", help="kolo's build folder (bin/kolorun, python/)")
    parser.add_argument("--tf-python", default=".venv/bin/python", help="a Python with TensorFlow")
    parser.add_argument("-k", default="", help="only the examples whose path contains this")
    parser.add_argument("--gloo", action="store_true", help="in the Gloo world: kolorun --gloo (horovodrun --gloo's)")
    parser.add_argument("--timeout", type=float, default=600)
    args = parser.parse_args()
    build = Path(args.build).resolve()
    pythons = {"torch": sys.executable, "tf": os.path.abspath(args.tf_python)}  # a venv's python: its link kept
    work = Path(tempfile.mkdtemp(prefix="kolo-horovod-examples-"))
    stand_in_mnist(work / "mnist")
    discover = work / "discover.sh"
    discover.write_text("#!/bin/sh\necho localhost:2\n")
    discover.chmod(0o755)
    env = dict(os.environ, PYTHONPATH=str(build / "python"), OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMP_NUM_THREADS="1")
    passed = failed = 0
    for n, (path, framework, options, script_args) in enumerate(EXAMPLES):
        if args.k not in path:
            continue
        text, changed = ported((Path(args.horovod) / path).read_text())
        script = work / ("%d_%s" % (n, Path(path).name))
        script.write_text(text)
        fill = {"mnist": str(work / "mnist"), "discover": str(discover)}
        command = ([str(build / "bin" / "kolorun")] + (["--gloo"] if args.gloo else []) + [o.format(**fill) for o in options] +
                   [pythons[framework], str(script)] + [a.format(**fill) for a in script_args])
        try:
            job = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout, env=env, cwd=str(work))
            ok, output = job.returncode == 0, job.stdout + job.stderr
        except subprocess.TimeoutExpired as e:
            ok, output = False, "timed out after %.0f s\n%s" % (args.timeout, e.stdout or "")
        small = SMALL_TORCH if framework == "torch" else SMALL_TF
        name = " ".join([path] + (script_args[len(small):] if script_args[:len(small)] == small else script_args))
        if ok:
            passed += 1
            # Its last word, not a warning's.
            last = [line for line in output.strip().split("\n")
                    if line.strip() and not line[0].isspace() and "Warning" not in line][-1:]
            print("PASS %s (%d import line%s changed): %s" % (name, changed, "" if changed == 1 else "s",
                                                              last[0][:120] if last else ""))
        else:
            failed += 1
            print("FAIL %s\n    %s" % (name, "\n    ".join(output.strip().split("\n")[-15:])))
        sys.stdout.flush()
    print("%d passed, %d failed (of %d)" % (passed, failed, passed + failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
