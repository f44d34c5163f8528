#!/bin/sh
# On a machine with a GPU: the GPU benchmarks (benchmarks/README.md, GPUs), in one command, each
# measuring kolo beside its peer in the same run: the pack/unpack of the ResNet-50 gradient set
# against one copy and torch.cat; kolo's allreduce of GPU tensors against raw NCCL (an nccl-tests
# table, and the gradient set); kolo.torch against DDP over NCCL on ResNet-50. 2 ranks share the one
# GPU, each its own NCCL host. Builds first (as run_gpu_suite.sh does) unless BUILD_DIR has a build.
#
#   tools/gpu/run_gpu_benchmarks.sh [BUILD_DIR]      (default /tmp/kolo-gpu)
#
# Tables and JSON go to $OUT when it is set, else BUILD_DIR/bench.
set -u
cd "$(dirname "$0")/../.."
build=${1:-/tmp/kolo-gpu}
out=${OUT:-$build/bench}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
python=$(command -v python3)
if [ ! -x "$build/benchmarks/gpu_allreduce" ]; then
  generator=""
  command -v ninja >/dev/null 2>&1 && generator="-G Ninja"
  cmake -S . -B "$build" $generator -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKOLO_WITH_CUDA=ON -DKOLO_WERROR=ON \
    -DPython_EXECUTABLE="$python" -Dpybind11_DIR="$($python -m pybind11 --cmakedir)" -DKOLO_JAX_PYTHON="$python" \
    > "$out/configure.log" 2>&1 && cmake --build "$build" -j "$(nproc)" > "$out/build.log" 2>&1 ||
    { tail -n 40 "$out/build.log" "$out/configure.log"; exit 1; }
fi
status=0
run() {  # NAME COMMAND...: the table on stdout and in $out/NAME.txt
  name=$1
  shift
  echo "== $name: $*"
  { "$@" 2>&1; echo $? > "$out/$name.rc"; } | tee "$out/$name.txt"
  [ "$(cat "$out/$name.rc")" = 0 ] || status=1
}
run gpu_pack "$build/benchmarks/gpu_pack" --json "$out/gpu_pack.json"
run gpu_pack_torch "$python" benchmarks/gpu_pack.py --binary "$build/benchmarks/gpu_pack" --json "$out/gpu_pack_torch.json"
run gpu_allreduce mpirun -np 2 --oversubscribe --bind-to none "$build/benchmarks/gpu_allreduce" --json "$out/gpu_allreduce.json"
run pytorch_synthetic "$build/bin/kolorun" -np 2 -x PYTHONPATH="$build/python" "$python" benchmarks/pytorch_synthetic.py \
  --cuda --model resnet50 --batch-size 32 --num-iters 10 --json "$out/pytorch_synthetic.json"
exit $status
