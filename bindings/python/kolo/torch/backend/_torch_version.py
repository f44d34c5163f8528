"""What the installed torch does with a Python backend, by its version (read in each release's
torch/distributed/distributed_c10d.py)."""
import torch

VERSION = tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2])

# A blocking collective takes None from its backend as an op finished there; before 2.8 it calls wait() on
# whatever comes back.
NONE_IS_FINISHED = VERSION >= (2, 8)

# new_group, whatever its backend, goes to the default group's backend on every rank; before 2.13 torch makes
# a group on its members only.
HANDS_NEW_GROUP = VERSION >= (2, 13)
