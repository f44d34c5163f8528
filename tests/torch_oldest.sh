#!/bin/sh
# The kolo backend of torch.distributed (tests/bindings/torch_backend) on the oldest torch the docs name
# (docs/frameworks/pytorch.md, "Torch versions"), in a virtual environment of its own (.venv-torch-oldest): what
# differs with torch's version (a blocking collective's Work, groups of some ranks, FSDP2) is the backend's to
# follow, and tests/torch2.sh runs today's torch only. Idempotent: an environment already there is reused.
#
#   tests/torch_oldest.sh [BUILD_DIR]      (default build)
set -eu
cd "$(dirname "$0")/.."
build=$(cd "${1:-build}" && pwd)
venv=$(pwd)/.venv-torch-oldest
torch_version=2.4.1
if ! "$venv/bin/python" -c "import torch, numpy, pytest, pytest_timeout; assert torch.__version__.startswith('$torch_version')" \
    >/dev/null 2>&1; then
  echo "installing torch $torch_version from PyPI into .venv-torch-oldest"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/pip" install -q --disable-pip-version-check "torch==$torch_version" numpy pytest pytest-timeout
fi
"$venv/bin/python" -c "import torch; print('torch', torch.__version__)"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONPATH="$build/python"
for np in 2 3; do
  timeout 300 mpirun -np $np --oversubscribe "$venv/bin/python" -m pytest -q -p no:cacheprovider -o timeout=120 \
    -o timeout_method=thread tests/bindings/torch_backend
done
