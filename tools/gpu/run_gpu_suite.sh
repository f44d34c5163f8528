#!/bin/sh
# On a machine with a GPU: builds kolo with CUDA and NCCL (warnings as errors) and runs everything
# that needs the GPU, in one command:
#   - ctest's `gpu` label: the GPU suite (every collective, every dtype, exact against the CPU path;
#     ready events, wait_on_stream, the timeline, errors) at 1, 2 and 3 ranks on CUDA + NCCL, the
#     batched copy kernel against its CPU arithmetic, kolo.torch, kolo.jax and the torch.distributed
#     backend (its CPU suite with CUDA as torch's default device) on CUDA tensors;
#   - compute-sanitizer (memcheck, racecheck, synccheck) over the kernel tests, and memcheck over a
#     2-rank GPU suite run;
#   - the digits example on 2 ranks on the GPU.
# Several ranks share one GPU: each claims a host of its own for NCCL (NCCL_HOSTID, set by the tests
# where ranks outnumber GPUs), which NCCL then connects through sockets.
#
#   tools/gpu/run_gpu_suite.sh [BUILD_DIR]      (default /tmp/kolo-gpu)
#
# Logs go to $OUT when it is set (the GPU machine's tool brings that folder back), else BUILD_DIR/logs.
# Exit status: 0 when every step passed.
set -u
cd "$(dirname "$0")/../.."
build=${1:-/tmp/kolo-gpu}
out=${OUT:-$build/logs}
mkdir -p "$out"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
python=$(command -v python3)
failed=""
step() {  # NAME COMMAND...: runs a step, its output into $out/NAME.log, and remembers a failure
  name=$1
  shift
  echo "== $name: $*"
  if "$@" >"$out/$name.log" 2>&1; then
    echo "   passed"
  else
    echo "   FAILED (exit $?); the end of $out/$name.log:"
    tail -n 40 "$out/$name.log"
    failed="$failed $name"
  fi
}

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$out/gpu.txt" 2>&1
cat "$out/gpu.txt"
generator=""
command -v ninja >/dev/null 2>&1 && generator="-G Ninja"
step configure cmake -S . -B "$build" $generator -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKOLO_WITH_CUDA=ON -DKOLO_WERROR=ON \
  -DPython_EXECUTABLE="$python" -Dpybind11_DIR="$($python -m pybind11 --cmakedir)" -DKOLO_JAX_PYTHON="$python"
step build cmake --build "$build" -j "$(nproc)"
[ -z "$failed" ] || { echo "build failed:$failed"; exit 1; }

step gpu_label ctest --test-dir "$build" -L '^gpu$' --output-on-failure
for tool in memcheck racecheck synccheck; do
  step "sanitizer_$tool" compute-sanitizer --tool "$tool" --error-exitcode 3 "$build/tests/kolo_gpu_kernel_tests" \
    --gtest_filter='*float32_to_float32*:*float32_to_float16*:*int8_to_int8*:*float16_to_float32*'
done
step sanitizer_memcheck_suite mpirun -np 2 --oversubscribe --bind-to none compute-sanitizer --tool memcheck --kernel-name-exclude kns=nccl --report-api-errors no --error-exitcode 3 \
  "$build/tests/kolo_gpu_tests" --gtest_filter='-*Timeline*:*Faults*'
# The example as users run it, but 2 ranks on the one GPU: each rank its own NCCL host.
step example_digits "$build/bin/kolorun" -np 2 -x PYTHONPATH="$build/python" sh -c \
  "NCCL_HOSTID=kolo-\$OMPI_COMM_WORLD_RANK NCCL_SOCKET_IFNAME=lo exec $python examples/pytorch/digits_kolo.py"

if [ -n "$failed" ]; then
  echo "FAILED:$failed"
  exit 1
fi
echo "every step passed"
