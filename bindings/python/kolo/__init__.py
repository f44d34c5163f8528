"""kolo: data-parallel training across processes, GPUs and hosts.

Framework bindings live in subpackages: ``import kolo.torch as kolo`` (Horovod's names, so
``import horovod.torch as hvd`` ports by changing the import). ``kolo.run`` is Horovod's ``horovod.run``.
"""
from kolo._errors import KoloError, KoloValueError
from kolo._lifecycle import build_summary, nccl_runtime, version
from kolo.runner import run

__version__ = version()
__all__ = ["KoloError", "KoloValueError", "build_summary", "nccl_runtime", "run", "version", "__version__"]
