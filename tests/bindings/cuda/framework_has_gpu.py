"""Exit 0 when the framework named on the command line (torch, jax or tensorflow) can use a GPU here, else 77
(ctest: skipped), saying why."""
import sys

framework = sys.argv[1]
try:
    if framework == "torch":
        import torch
        ok = torch.cuda.is_available()
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
