#!/bin/sh
# Horovod 0.28.1 (PyTorch over MPI) built from its PyPI sdist into .venv-horovod, over Debian's Python and
# torch, for benchmarks/horovod_peer.py. Nothing of Horovod's goes into this repository. Idempotent: a
# venv that already imports horovod.torch is kept.
#
#   sh tools/horovod_venv.sh
set -eu
cd "$(dirname "$0")/.."
venv=.venv-horovod
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import horovod.torch" 2>/dev/null; then
  echo "Horovod is in $venv"
  exit 0
fi
# Horovod's build needs torch's C++ headers and CMake files, which Debian ships apart from python3-torch.
dpkg -s libtorch-dev >/dev/null 2>&1 || apt-get install -y -q libtorch-dev
/usr/bin/python3 -m venv --system-site-packages "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check cloudpickle
HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_MPI=1 HOROVOD_WITHOUT_TENSORFLOW=1 HOROVOD_WITHOUT_MXNET=1 \
  HOROVOD_WITHOUT_GLOO=1 "$venv/bin/pip" install -q --disable-pip-version-check --no-build-isolation horovod==0.28.1
"$venv/bin/python" -c "import horovod.torch"
echo "Horovod is in $venv"
