"""Exit 0 when the framework named on the command line (torch, jax or tensorflow; torch_backend: torch as the kolo
backend needs it) can use a GPU here, else 77 (ctest: skipped), saying why."""
import sys

framework = sys.argv[1]
try:
    if framework in ("torch", "torch_backend"):
        import torch
        ok = torch.cuda.is_available()
        version = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])
        if ok and framework == "torch_backend" and version < (2, 4):
            print("skipped: the kolo backend needs torch 2.4 or later, and %s has %s" % (sys.executable,
                                                                                    torch.__version__))
            sys.exit(77)
    elif framework == "tensorflow":
        import tensorflow as tf
        ok = len(tf.config.list_physical_devices("GPU")) > 0
    else:
        import jax
        try:
            ok = len(jax.devices("cuda")) > 0
        except RuntimeError:
            ok = False
except ImportError as e:
    print("skipped: %s is not installed for %s (%s)" % (framework, sys.executable, e))
    sys.exit(77)
if not ok:
    print("skipped: %s sees no GPU here" % framework)
sys.exit(0 if ok else 77)
