"""`pip install .` as a user runs it, into fresh virtual environments of Debian's Python with no system site
packages: one with today's torch from PyPI, one with tensorflow-cpu; the wheel that `pip wheel .` made, into a
third that sees Debian's own packages (its torch 1.13, numpy, scikit-learn); and an sdist that builds the same
wheel. Each example trains on 2 ranks through the installed `kolorun` to 97% or more.

    /usr/bin/python3 -m pytest -v tests/system/install        (.ci/run runs it after ctest)

Everything lives in build-pip/ (ignored by git): the virtual environments, and the CMake build folder they
share (made anew each run, so the first install builds everything). Each environment is made anew, with
downloads straight from PyPI and no cache (PyPI is fast here; disk is not plentiful: torch's environment
alone is 5.6 GB), and removed as soon as its tests are done, so one large environment exists at a time.

kolo is built with KOLO_WITH_CUDA=0: this machine has CUDA but no GPU, and a CUDA build of libkolo links
the system's NCCL, which breaks PyPI's torch when kolo is imported first (docs/install.md, "Which NCCL").
"""
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
WORK = ROOT / "build-pip"
BUILD = WORK / "cmake-build"
VERSION = re.search(r"project\(kolo VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text()).group(1)
TORCH = ["torch>=2", "scikit-learn"]
TENSORFLOW = ["tensorflow-cpu==2.21.0", "scikit-learn"]


def run(command, timeout, env=None, check=True, cwd=ROOT):
    """Runs a command, its output kept; a failure shows the command and the end of its output."""
    job = subprocess.run([str(c) for c in command], cwd=cwd, env=env, timeout=timeout, capture_output=True, text=True)
    if check and job.returncode != 0:
        pytest.fail("%s exited %d:\n%s\n%s" % (" ".join(map(str, command)), job.returncode, job.stdout[-4000:],
                                              job.stderr[-4000:]))
    return job


def clean_environment(**settings):
    """This process's environment without kolo's build choices or CMake arguments from outside, plus `settings`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KOLO_") and k != "CMAKE_ARGS"}
    env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", **settings)
    return env


class Venv:
    """A fresh virtual environment of /usr/bin/python3 (no system site packages unless asked) with `requirements`
    from PyPI, installed without pip's cache (remove() deletes it all)."""

    def __init__(self, name, requirements, system_site_packages=False):
        self.path = WORK / ("venv-" + name)
        shutil.rmtree(self.path, ignore_errors=True)
        run(["/usr/bin/python3", "-m", "venv", *(["--system-site-packages"] if system_site_packages else []), self.path],
            timeout=120)
        self.python = self.path / "bin" / "python"
        if requirements:
            run([self.pip(), "install", "-q", "--no-cache-dir", *requirements], timeout=900)

    def remove(self):
        shutil.rmtree(self.path, ignore_errors=True)

    def pip(self):
        return self.path / "bin" / "pip"

    def env(self, **settings):
        """As with the environment activated: its bin first on PATH (kolorun, python)."""
        return clean_environment(PATH="%s:%s" % (self.path / "bin", os.environ["PATH"]), **settings)

    def install_kolo(self, *args, build=BUILD):
        return run([self.pip(), "install", "--config-settings", "build-dir=%s" % build, *args], timeout=1200,
                   env=self.env(KOLO_WITH_CUDA="0"))

    def site_packages(self):
        return Path(run([self.python, "-c", "import sysconfig; print(sysconfig.get_paths()['platlib'])"],
                        timeout=60).stdout.strip())


def final_accuracy(venv, example):
    """Trains `example` on 2 ranks through the environment's kolorun; the last epoch's test accuracy."""
    job = run(["kolorun", "-np", "2", "python", ROOT / "examples" / example], timeout=600, env=venv.env())
    accuracies = re.findall(r"test accuracy ([0-9.]+)(%?)", job.stdout)
    assert len(accuracies) == 15, job.stdout  # rank 0 prints one line per epoch
    value, percent = accuracies[-1]
    return float(value) / (100 if percent else 1)


@pytest.fixture(scope="session")
def fresh_build():
    """The CMake build folder all installs share, made anew once per run."""
    WORK.mkdir(exist_ok=True)
    shutil.rmtree(BUILD, ignore_errors=True)
    return BUILD


# Class-scoped: each environment is removed when its class's tests are done, before the next is made.
@pytest.fixture(scope="class")
def torch_venv(fresh_build):
    venv = Venv("torch", TORCH)
    venv.install_kolo(ROOT)
    yield venv
    venv.remove()


@pytest.fixture(scope="class")
def tensorflow_venv(fresh_build):  # reuses the torch environment's build, and adds kolo.tensorflow's ops
    venv = Venv("tensorflow", TENSORFLOW)
    venv.install_kolo(ROOT)
    yield venv
    venv.remove()


class TestTorchEnvironment:
    """Today's torch from PyPI, kolo installed from the source tree."""

    def test_the_pytorch_example_through_the_installed_kolorun(self, torch_venv):
        env = torch_venv.env()
        def output(*command):
            return run(command, timeout=120, env=env).stdout

        assert output("sh", "-c", "command -v kolorun") == "%s\n" % (torch_venv.path / "bin" / "kolorun")
        assert output("kolorun", "--version") == "kolorun (kolo) %s\n" % VERSION
        assert output("python", "-c", "import kolo; print(kolo.__version__)") == VERSION + "\n"
        assert output("python", "-c", "import torch; print(torch.__version__[0])") == "2\n"
        assert final_accuracy(torch_venv, "pytorch/digits_kolo.py") >= 0.97
        # Either import order (a CPU-only kolo links no NCCL of its own).
        for first, second in (("kolo.torch", "torch"), ("torch", "kolo.torch")):
            assert output("python", "-c", "import %s, %s; print('ok')" % (first, second)) == "ok\n"
        # kolo.run (horovod.run) finds the installed kolorun, and pip brought its cloudpickle.
        assert output("python", "-c", "import kolo; print(kolo.run(abs, args=(-2,), num_proc=2))") == "[2, 2]\n"
        # torch finds the kolo backend through its entry point, with no import of kolo (torchrun gives MASTER_ADDR).
        assert output("torchrun", "--standalone", "--nproc_per_node", "2", "--no-python", "python", "-c",
                      "import torch, torch.distributed as d; d.init_process_group('kolo'); t = torch.ones(1); "
                      "d.all_reduce(t); d.get_rank() == 0 and print(d.get_backend(), t.item())") == "kolo 2.0\n"
        size = run(["du", "-sk", torch_venv.site_packages() / "kolo"], timeout=60).stdout.split()[0]
        print("installed: %s KiB in %s" % (size, torch_venv.site_packages() / "kolo"))

    def test_parts_built_without_their_framework_say_what_to_reinstall(self, torch_venv):
        env = torch_venv.env()
        python3 = torch_venv.path / "bin" / "python3"  # the build's Python, as scikit-build-core names it
        for module, framework, part, probe in (("kolo.tensorflow", "TensorFlow", "kolo.tensorflow's ops", "tensorflow"),
                                               ("kolo.jax", "JAX", "kolo.jax's XLA handlers", "jax.ffi")):
            top = probe.split(".")[0]
            job = run(["python", "-c", "import " + module], timeout=120, env=env, check=False)
            assert job.returncode == 1
            assert job.stderr.splitlines()[-1] == (
                "ImportError: kolo was built without %s support (%s not built: %s cannot import %s (ModuleNotFoundError: "
                "No module named '%s')): install %s first, then reinstall kolo: pip install --no-cache-dir "
                "--force-reinstall --no-deps %s" % (framework, part, python3, probe, top, top, ROOT))
        lines = run(["kolorun", "--check-build"], timeout=60, env=env).stdout.splitlines()
        assert lines[-4:] == [
            "  CUDA + NCCL   not built: KOLO_WITH_CUDA=OFF",
            "  [X] PyTorch     kolo.torch: pure Python over kolo's C ABI: any torch from 1.13, installed before or after kolo",
            "  [ ] TensorFlow  kolo.tensorflow's ops not built: %s cannot import tensorflow (ModuleNotFoundError: No module "
            "named 'tensorflow')" % python3,
            "  [ ] JAX         kolo.jax's XLA handlers not built: %s cannot import jax.ffi (ModuleNotFoundError: No module "
            "named 'jax')" % python3]

    def test_an_sdist_builds_the_same_wheel_as_the_source_tree(self, torch_venv):
        dist = WORK / "sdist"
        shutil.rmtree(dist, ignore_errors=True)
        run([torch_venv.pip(), "install", "-q", "build"], timeout=300)
        run([torch_venv.python, "-m", "build", "--sdist", "-o", dist, ROOT], timeout=600)
        sdist, = dist.glob("kolo-%s.tar.gz" % VERSION)
        env = torch_venv.env(KOLO_WITH_CUDA="0")
        run([torch_venv.pip(), "wheel", "--no-deps", "-w", dist / "from-sdist", sdist], timeout=1200, env=env)
        run([torch_venv.pip(), "wheel", "--no-deps", "-w", dist / "from-tree", "--config-settings", "build-dir=%s" % BUILD,
             ROOT], timeout=1200, env=env)
        names = [sorted(zipfile.ZipFile(next((dist / d).glob("*.whl"))).namelist()) for d in ("from-sdist", "from-tree")]
        assert names[0] == names[1]
        assert "kolo/libkolo.so.0" in names[0] and "kolo/bin/kolorun" in names[0] and "kolo/elastic/__init__.py" in names[0]

    def test_cuda_required_but_not_found_fails_the_install_naming_it(self, torch_venv):
        build = WORK / "cmake-build-no-cuda"
        shutil.rmtree(build, ignore_errors=True)
        env = torch_venv.env(KOLO_WITH_CUDA="1", KOLO_CMAKE_ARGS="-DCMAKE_DISABLE_FIND_PACKAGE_CUDAToolkit=ON")
        job = run([torch_venv.pip(), "install", "--config-settings", "build-dir=%s" % build, ROOT], timeout=600, env=env,
                  check=False)
        assert job.returncode == 1
        output = re.sub(r"\s+", " ", job.stdout + job.stderr)  # CMake wraps its messages
        assert "KOLO_WITH_CUDA is on (1), but not found: the CUDA toolkit (put nvcc on PATH or set CUDAToolkit_ROOT)" in output
        # The failed install left the one before in place.
        assert run(["kolorun", "--version"], timeout=60, env=torch_venv.env()).stdout == "kolorun (kolo) %s\n" % VERSION


class TestTensorFlowEnvironment:
    """tensorflow-cpu, kolo.tensorflow's ops built through build isolation; then a wheel of it."""

    def test_the_tensorflow_example_with_ops_built_through_build_isolation(self, tensorflow_venv):
        lines = run(["kolorun", "--check-build"], timeout=60, env=tensorflow_venv.env()).stdout.splitlines()
        assert lines[-2] == "  [X] TensorFlow  kolo.tensorflow's ops, built against tensorflow 2.21.0"
        assert final_accuracy(tensorflow_venv, "tensorflow/digits_kolo.py") >= 0.97

    # The wheel goes where Debian's torch 1.13 is (ctest's kolo.torch suites use it too), not into an environment
    # filled from PyPI: the oldest torch kolo.torch supports, and no third large download in CI.
    def test_a_wheel_from_pip_wheel_installs_beside_debians_torch(self, tensorflow_venv):
        dist = WORK / "dist"
        shutil.rmtree(dist, ignore_errors=True)
        run([tensorflow_venv.pip(), "wheel", "--no-deps", "-w", dist, "--config-settings", "build-dir=%s" % BUILD,
             ROOT], timeout=1200, env=tensorflow_venv.env(KOLO_WITH_CUDA="0"))
        wheel, = dist.glob("kolo-%s-*.whl" % VERSION)
        venv = Venv("wheel", [], system_site_packages=True)
        try:
            run([venv.pip(), "install", "-q", "--no-cache-dir", wheel], timeout=900)
            assert run(["kolorun", "--version"], timeout=60, env=venv.env()).stdout == "kolorun (kolo) %s\n" % VERSION
            assert run([venv.python, "-c", "import torch; print(torch.__version__)"], timeout=120,
                       env=venv.env()).stdout.startswith("1.13")
            assert final_accuracy(venv, "pytorch/digits_kolo.py") >= 0.97
        finally:
            venv.remove()


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-v"]))
