"""Every binding exports the names kolo._policy.exports lists, and kolo.tensorflow does not import kolo.keras.
Nothing here starts kolo (no MPI). ctest runs this file with Debian's Python (kolo.torch) and with the Python
that has jax, keras and TensorFlow (.venv); a framework the Python lacks is skipped, saying why."""
import importlib
import importlib.util
import os
import subprocess
import sys

import pytest

from kolo._policy.exports import COMMON, SHARED

# binding: the modules it needs (kolo.keras needs a backend too: KERAS_BACKEND's, jax by default here)
NEEDS = {"torch": ("torch",), "tensorflow": ("tensorflow",), "jax": ("jax",),
         "keras": ("keras", os.environ.get("KERAS_BACKEND", "jax"))}


def _binding(name):
    missing = [m for m in NEEDS[name] if importlib.util.find_spec(m) is None]
    if missing:
        pytest.skip("kolo.%s: %s not installed for %s" % (name, " and ".join(missing), sys.executable))
    try:
        return importlib.import_module("kolo." + name)
    except ImportError as e:  # kolo built without the framework's part: _frameworks says so
        pytest.skip("kolo.%s cannot be imported: %s" % (name, e))


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_each_binding_exports_the_common_names(name):
    binding = _binding(name)
    assert set(COMMON) <= set(dir(binding)), sorted(set(COMMON) - set(dir(binding)))
    assert set(COMMON) <= set(binding.__all__)
    assert all(hasattr(binding, n) for n in binding.__all__)


@pytest.mark.parametrize("name", sorted(NEEDS))
def test_the_shared_names_are_the_same_objects_in_every_binding(name):
    from kolo._policy import exports
    binding = _binding(name)
    assert [n for n in SHARED if getattr(binding, n) is not getattr(exports, n)] == []


def test_tensorflow_does_not_import_keras():
    # Keras code lives under kolo.keras; kolo.tensorflow hands out its two Keras names only when asked.
    _binding("tensorflow")
    code = "import sys, kolo.tensorflow; print(sorted(m for m in sys.modules if m.startswith('kolo.keras')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "[]"
