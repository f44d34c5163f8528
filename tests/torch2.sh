#!/bin/sh
# kolo.torch against today's torch from PyPI (2.x, a CUDA build that runs on the CPU here), beside the
# Debian torch 1.13 the main suite uses: a virtual environment without Debian's packages (.venv-torch2),
# kolo from build/ (its Python module is built for Debian's Python 3.11, which the venv shares), then the
# Python suite at 2 and 3 ranks (torch.compile's test runs here) and kolo's import-order checks
# (tests/bindings/loading) and the kolo backend of torch.distributed (tests/bindings/torch_backend); then the Gloo
# world under torchrun (tests/system/gloo/test_torchrun.py), kolo's store against torch's TCPStore both ways
# (test_tcp_store_torch.py), and init_process_group("kolo") under each launcher (tests/system/torch_backend), and a
# DDP loop surviving a lost rank in place.
# Idempotent: an environment already there is reused.
#
#   tests/torch2.sh [BUILD_DIR]      (default build)
set -eu
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
venv=$(pwd)/.venv-torch2
# Pinned to what was tested; a newer torch is a change of this line, tested like any other.
torch_version=2.15.0
if ! "$venv/bin/python" -c "import torch, numpy, pytest, pytest_timeout, sklearn; assert torch.__version__.startswith('$torch_version')" \
    >/dev/null 2>&1; then
  echo "installing torch $torch_version from PyPI into .venv-torch2"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "torch==$torch_version" numpy pytest pytest-timeout \
    scikit-learn
fi
"$venv/bin/python" -c "import torch; print('torch', torch.__version__)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONPATH="$build/python"
# torch.compile's kernels are cached in this environment, not in /tmp/torchinductor_$USER: a kernel another
# environment built there failed to load here ("undefined symbol: Sleef_expf16_u10").
export TORCHINDUCTOR_CACHE_DIR="$venv/inductor-cache"
KOLO_LOADING_PYTHON="$venv/bin/python" timeout 300 /usr/bin/python3 -m pytest -q -p no:cacheprovider tests/bindings/loading
# kolo.torch's suite at 2 ranks (ctest runs it at 1, 2 and 3 with Debian's torch: what a rank count changes is
# kolo's, not torch's).
timeout 600 mpirun -np 2 --oversubscribe "$venv/bin/python" -m pytest -q -p no:cacheprovider -o timeout=180 tests/bindings/torch
# torch.distributed on the kolo backend (init_process_group("kolo")): ops, DDP, FSDP2, ZeroRedundancyOptimizer.
for np in 2 3; do
  timeout 300 mpirun -np $np --oversubscribe "$venv/bin/python" -m pytest -q -p no:cacheprovider -o timeout=120 \
    tests/bindings/torch_backend
done
if [ -x "$build/tests/kolo_store_tool" ]; then
  KOLO_BUILD_DIR="$build" KOLO_STORE_TOOL="$build/tests/kolo_store_tool" timeout 900 "$venv/bin/python" -m pytest -q \
    -p no:cacheprovider tests/system/gloo/test_torchrun.py tests/system/gloo/test_tcp_store_torch.py \
    tests/system/torch_backend
fi
# An unchanged DDP loop on the kolo backend surviving a lost rank in place (kolo.torch.elastic), in the Gloo world:
# the in-place suite's case that needs this environment (tests/elastic_in_place.sh, later in CI, runs without it).
IN_PLACE_WORLD=gloo KOLO_TORCH2_PYTHON="$venv/bin/python" KOLO_ULFM_BUILD_DIR="$build" timeout 300 /usr/bin/python3 \
  -m pytest -q -p no:cacheprovider tests/system/elastic_in_place/test_in_place_frameworks.py -k ddp_loop
# Ray (docs/ray.md), with Ray from PyPI in the same environment: kolo.ray's RayExecutor on a Ray cluster of 2
# emulated hosts (a Horovod-idiom function, a rank that raises, the elastic executor losing a node and growing
# onto one that joins, a cluster too small), and Ray Train's TorchTrainer on backend="kolo" and
# DataParallelTrainer with KoloConfig. The other cases run by hand (docs/ray.md).
ray_version=2.60.0
if ! "$venv/bin/python" -c "import ray, ray.train; assert ray.__version__ == '$ray_version'" >/dev/null 2>&1; then
  echo "installing Ray $ray_version from PyPI into .venv-torch2"
  "$venv/bin/pip" install -q --disable-pip-version-check "ray[train]==$ray_version"
fi
PYTHONPATH="$build/python" timeout 900 "$venv/bin/python" -m pytest -q -p no:cacheprovider tests/system/ray \
  -k "(ray_train or (one_process_weights and num_hosts) or raises or (elastic and not actor) or grows or refused) and not example"
# The Kubernetes recipes with torchrun in each pod (docs/kubernetes.md: static, and elastic with a pod that restarts)
# need this environment's torchrun: ctest's cluster_kubernetes, which runs before this script, skips them.
KOLO_BUILD_DIR="$build" KOLO_TORCHRUN="$venv/bin/torchrun" timeout 300 /usr/bin/python3 -m pytest -q -rs \
  -p no:cacheprovider tests/system/cluster/test_kubernetes.py -k torchrun
