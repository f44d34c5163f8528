"""Builds the Python package from the repository's CMake project (the same build as .ci/setup),
then ships the extension, libkolo and kolorun inside the package."""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def project_version():
    text = (ROOT / "CMakeLists.txt").read_text()
    return re.search(r"project\(kolo VERSION ([0-9.]+)", text).group(1)


class CMakeExtension(Extension):
    def __init__(self):
        super().__init__("kolo._C", sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        package_dir = Path(self.get_ext_fullpath(ext.name)).resolve().parent
        build = Path(self.build_temp).resolve() / "cmake"
        cmake = shutil.which("cmake") or "cmake"
        try:
            import pybind11
            pybind11_dir = ["-Dpybind11_DIR=" + pybind11.get_cmake_dir()]
        except ImportError:
            pybind11_dir = []
        subprocess.check_call([
            cmake, "-S", str(ROOT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
            "-DKOLO_BUILD_TESTS=OFF", "-DKOLO_BUILD_BENCHMARKS=OFF", "-DKOLO_BUILD_EXAMPLES=OFF",
            "-DPython_EXECUTABLE=" + sys.executable,
            # Installed layout from the start: _C and kolorun find libkolo beside them.
            "-DCMAKE_BUILD_WITH_INSTALL_RPATH=ON",
        ] + pybind11_dir)
        jobs = str(os.cpu_count() or 2)
        targets = ["kolo_python_C", "kolorun"]
        # kolo.jax's XLA handlers, when this Python has jax (its jaxlib ships the headers).
        with_jax = subprocess.call([sys.executable, "-c", "import jax.ffi"], stderr=subprocess.DEVNULL) == 0
        if with_jax:
            targets.append("kolo_jax_ffi")
        subprocess.check_call([cmake, "--build", str(build), "-j", jobs, "--target", *targets])
        package_dir.mkdir(parents=True, exist_ok=True)
        for built in (build / "python" / "kolo").glob("_C*.so"):
            shutil.copy2(built, package_dir / built.name)
        library = (build / "src" / "libkolo.so").resolve()
        shutil.copy2(library, package_dir / ("libkolo.so.%s" % project_version().split(".")[0]))
        if with_jax:
            (package_dir / "jax").mkdir(exist_ok=True)
            shutil.copy2(build / "python" / "kolo" / "jax" / "libkolo_xla_ffi.so", package_dir / "jax")
        (package_dir / "bin").mkdir(exist_ok=True)
        shutil.copy2(build / "bin" / "kolorun", package_dir / "bin" / "kolorun")


setup(
    version=project_version(),
    ext_modules=[CMakeExtension()],
    cmdclass={"build_ext": CMakeBuild},
    package_data={"kolo": ["bin/kolorun", "libkolo.so.*", "jax/libkolo_xla_ffi.so"]},
    zip_safe=False,
)
