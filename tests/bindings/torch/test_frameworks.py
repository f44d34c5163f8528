"""What importing a framework binding says where kolo was built without its part, or the framework is
missing (kolo/_frameworks.py): the exact messages, for a pip install and a CMake build tree."""
import sys

import pytest

from kolo import _build_info, _frameworks


@pytest.fixture
def built(monkeypatch, tmp_path):
    """Sets what kolo was built with: built(pip, torch=(state, detail), ...); returns the source folder."""
    def set_info(pip, **frameworks):
        monkeypatch.setattr(_build_info, "BUILT_BY_PIP", pip)
        monkeypatch.setattr(_build_info, "SOURCE_DIR", str(tmp_path))
        monkeypatch.setattr(_build_info, "FRAMEWORKS", dict(_build_info.FRAMEWORKS, **frameworks))
        return tmp_path
    return set_info


def test_a_part_not_built_says_to_install_the_framework_then_reinstall_kolo(built, monkeypatch):
    source = built(True, jax=("missing", "/v/bin/python cannot import jax.ffi (No module named 'jax')"))
    monkeypatch.setattr(_frameworks.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError) as e:
        _frameworks.require("jax")
    assert str(e.value) == (
        "kolo was built without JAX support (kolo.jax's XLA handlers not built: /v/bin/python cannot import jax.ffi "
        "(No module named 'jax')): install jax first, then reinstall kolo: "
        "pip install --no-cache-dir --force-reinstall --no-deps %s" % source)


def test_a_framework_installed_after_kolo_needs_kolo_reinstalled(built, monkeypatch):
    source = built(True, tensorflow=("missing", "/v/bin/python cannot import tensorflow (No module named 'tensorflow')"))
    monkeypatch.setattr(_frameworks.importlib.util, "find_spec", lambda name: object())
    with pytest.raises(ImportError) as e:
        _frameworks.require("tensorflow")
    assert str(e.value) == (
        "kolo was built without TensorFlow support (kolo.tensorflow's ops not built: /v/bin/python cannot import "
        "tensorflow (No module named 'tensorflow')): reinstall kolo: "
        "pip install --no-cache-dir --force-reinstall --no-deps %s" % source)


def test_a_part_left_out_names_its_switch(built, monkeypatch):
    source = built(True, torch=("off", "KOLO_WITH_PYTORCH=0"))
    with pytest.raises(ImportError) as e:
        _frameworks.require("torch")
    assert str(e.value) == ("kolo was built without PyTorch support (KOLO_WITH_PYTORCH=0 left kolo.torch out): unset "
                            "KOLO_WITH_PYTORCH, then reinstall kolo: "
                            "pip install --no-cache-dir --force-reinstall --no-deps %s" % source)


def test_a_source_tree_gone_and_a_cmake_build_tree(built, monkeypatch):
    built(True, jax=("missing", "no jax"))
    monkeypatch.setattr(_build_info, "SOURCE_DIR", "/nonexistent/kolo-0.1.0")  # built from an sdist, unpacked and gone
    monkeypatch.setattr(_frameworks.importlib.util, "find_spec", lambda name: object())
    with pytest.raises(ImportError) as e:
        _frameworks.require("jax")
    assert str(e.value) == ("kolo was built without JAX support (kolo.jax's XLA handlers not built: no jax): reinstall "
                            "kolo: pip install --no-cache-dir --force-reinstall --no-deps <kolo's source>")
    monkeypatch.setattr(_build_info, "BUILT_BY_PIP", False)
    with pytest.raises(ImportError) as e:
        _frameworks.require("jax")
    assert str(e.value) == (
        "kolo was built without JAX support (kolo.jax's XLA handlers not built: no jax): configure kolo's build again "
        "with a Python that has it (cmake -DKOLO_TF_PYTHON=... -DKOLO_JAX_PYTHON=...; .ci/setup passes .venv's) and build")


def test_a_framework_built_for_but_not_installed(built, monkeypatch):
    built(True, tensorflow=("built", "2.21.0"), torch=("built", "pure Python"))
    monkeypatch.setattr(_frameworks.importlib.util, "find_spec", lambda name: None)
    with pytest.raises(ImportError) as e:
        _frameworks.require("tensorflow")
    assert str(e.value) == ("kolo.tensorflow needs TensorFlow, which this Python (%s) cannot import: install tensorflow "
                            "(kolo was built against tensorflow 2.21.0)" % sys.executable)
    with pytest.raises(ImportError) as e:
        _frameworks.require("torch")
    assert str(e.value) == "kolo.torch needs PyTorch, which this Python (%s) cannot import: install torch" % sys.executable


def test_nothing_is_raised_where_built_and_installed(built, monkeypatch):
    built(True, torch=("built", "pure Python"))
    monkeypatch.setattr(_frameworks.importlib.util, "find_spec", lambda name: object())
    assert _frameworks.require("torch") is None
