"""What a framework binding checks before it loads: that kolo was built with its part (kolo.tensorflow's
ops, kolo.jax's XLA handlers; kolo.torch needs none) and that the framework itself imports. Either
failing raises ImportError saying what to install or reinstall, never an error from deep inside."""
import importlib.util
import os
import sys

from kolo import _build_info

# framework: (its name, kolo's part for it, the KOLO_WITH_* switch that chooses it)
_FRAMEWORKS = {
    "torch": ("PyTorch", "kolo.torch", "KOLO_WITH_PYTORCH"),
    "tensorflow": ("TensorFlow", "kolo.tensorflow's ops", "KOLO_WITH_TENSORFLOW"),
    "jax": ("JAX", "kolo.jax's XLA handlers", "KOLO_WITH_JAX"),
}


def rebuild():
    """How to rebuild kolo against the frameworks installed now, as the end of a message."""
    if not _build_info.BUILT_BY_PIP:
        return ("configure kolo's build again with a Python that has it (cmake -DKOLO_TF_PYTHON=... "
                "-DKOLO_JAX_PYTHON=...; .ci/setup passes .venv's) and build")
    source = _build_info.SOURCE_DIR if os.path.isdir(_build_info.SOURCE_DIR) else "<kolo's source>"
    # --no-cache-dir: a wheel pip cached from an earlier build would bring back the same parts.
    return "reinstall kolo: pip install --no-cache-dir --force-reinstall --no-deps %s" % source


def require(framework):
    """Raises ImportError unless kolo was built with `framework`'s part and the framework imports."""
    name, part, switch = _FRAMEWORKS[framework]
    state, detail = _build_info.FRAMEWORKS[framework]
    installed = importlib.util.find_spec(framework) is not None
    if state == "off":
        raise ImportError("kolo was built without %s support (%s=0 left %s out): unset %s, then %s"
                          % (name, switch, part, switch, rebuild()))
    if state == "missing":
        first = "" if installed else "install %s first, then " % framework
        raise ImportError("kolo was built without %s support (%s not built: %s): %s%s"
                          % (name, part, detail, first, rebuild()))
    if not installed:
        against = "" if framework == "torch" else " (kolo was built against %s %s)" % (framework, detail)
        raise ImportError("kolo.%s needs %s, which this Python (%s) cannot import: install %s%s"
                          % (framework, name, sys.executable, framework, against))
