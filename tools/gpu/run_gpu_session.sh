#!/bin/bash
# Everything a session on the GPU machine checks, in one command that fits its short lease: builds
# kolo with CUDA (and, beside it, against Open MPI 5 with ULFM for the in-place run), then
#   1. the gpu label (run_gpu_suite.sh without the sanitizers unless KOLO_GPU_SANITIZERS=1): the GPU
#      suite at 1-3 ranks, the kernel tests, kolo.torch (torch.compile too) and kolo.jax on CUDA;
#      the fusion-hold test alone at 3 ranks, five times, its trace kept where it fails;
#   2. the device path's own overhead: kolo's allreduce at 1 rank beside raw ncclAllReduce at 1 rank,
#      8 B to 64 MiB and the ResNet-50 set, with the caller driving its op (the default) and with
#      KOLO_CALLER_DRIVES=0 (every op on kolo's thread), alternated; once beside a nonblocking NCCL
#      communicator (kolo's kind); and a timeline of small ops;
#   3. the in-place path on the GPU (run_gpu_in_place.sh): 3 ranks, one killed, then one frozen;
#   4. while time is left (KOLO_GPU_SESSION_SECONDS, default 420, counted from the start): the 2-rank
#      allreduce table and the ResNet-50 synthetic benchmark beside DDP;
#   5. then, while time is still left, the CPU small op at 2, 4 and 8 ranks and the ResNet-50 set at 2 and 4
#      ranks, a core each.
# Every step's log goes into $OUT/logs.tar.gz (the device tool brings back 8 files at most) and a
# summary of each step into $OUT/summary.txt.
#
#   tools/gpu/run_gpu_session.sh [WHEEL_DIR]    (WHEEL_DIR: Open MPI 5's wheel; default .device/wheels)
#
# KOLO_GPU_BUILD=DIR uses a build made already instead of building (to rehearse the script's flow).
set -u
cd "$(dirname "$0")/../.."
root=$(pwd)
wheels=${1:-$root/.device/wheels}
budget=${KOLO_GPU_SESSION_SECONDS:-420}
out=${OUT:-/tmp/kolo-gpu/session}
logs=/tmp/kolo-gpu/logs
build=/tmp/kolo-gpu/build
mkdir -p "$out" "$logs"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
python=$(command -v python3)
began=$(date +%s)
summary=$out/summary.txt
: > "$summary"
note() { echo "[$(($(date +%s) - began)) s] $*" | tee -a "$summary"; }
pack() { tar -C "$(dirname "$logs")" -czf "$out/logs.tar.gz" "$(basename "$logs")" 2>/dev/null; }
trap pack EXIT
step() {  # NAME SECONDS COMMAND...: a bounded step, its output in $logs/NAME.log
  local name=$1 limit=$2
  shift 2
  local t0=$(date +%s)
  timeout -k 5 "$limit" "$@" > "$logs/$name.log" 2>&1
  local rc=$?
  note "$name: exit $rc in $(($(date +%s) - t0)) s"
  case $rc in 0 | 77) ;; *) tail -n 15 "$logs/$name.log" | sed 's/^/    /' | tee -a "$summary" ;; esac
  return $rc
}
left() { echo $((budget - ($(date +%s) - began))); }

nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee "$logs/gpu.txt" | tee -a "$summary"
nproc | sed 's/^/cores: /' | tee -a "$summary"

# The in-place build (Open MPI 5, ULFM) in the background, beside the main one.
(bash tools/gpu/run_gpu_in_place.sh --build-only "$wheels" "$logs/in_place" > "$logs/in_place_build.log" 2>&1; echo $? > "$logs/in_place_build.rc") &
ulfm_build=$!

if [ -n "${KOLO_GPU_BUILD:-}" ]; then
  build=$KOLO_GPU_BUILD  # built already (a rehearsal of this script on a machine without a GPU)
else
  generator=""
  command -v ninja >/dev/null 2>&1 && generator="-G Ninja"
  step configure 120 cmake -S . -B "$build" $generator -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKOLO_WITH_CUDA=ON \
    -DKOLO_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DPython_EXECUTABLE="$python" \
    -Dpybind11_DIR="$($python -m pybind11 --cmakedir)" -DKOLO_JAX_PYTHON="$python" || exit 1
  step build 300 cmake --build "$build" -j "$(nproc)" || exit 1
fi

# 3. The in-place path on the GPU, beside the gpu label (its own 3 ranks on the GPU; what it measures is
# bounded by the peer watch's seconds, not by the GPU's speed).
(for _ in $(seq 300); do [ -f "$logs/in_place_build.rc" ] && break; sleep 1; done  # not this subshell's child
 note "in-place build: exit $(cat "$logs/in_place_build.rc" 2>/dev/null)"
 step in_place 200 bash tools/gpu/run_gpu_in_place.sh --run-only "$wheels" "$logs/in_place"
 grep -h -E "passed|failed|FAILED|training again" "$logs/in_place/summary.txt" 2>/dev/null | sed 's/^/    /' >> "$summary") &
in_place=$!

# 1. The gpu label, then the fusion-hold test alone at 3 ranks.
step gpu_label 270 ctest --test-dir "$build" -L '^gpu$' -j 3 --output-on-failure
grep -E "tests passed|Passed|Failed|Not Run|Skipped|\*\*\*" "$logs/gpu_label.log" | sed 's/^/    /' >> "$summary"
rm -f /tmp/kolo_gpu_hold_*
step fusion_hold_np3 120 mpirun -np 3 --oversubscribe --bind-to none "$build/tests/kolo_gpu_tests" \
  --gtest_filter='GpuFusion.*' --gtest_repeat=5
cp /tmp/kolo_gpu_hold_* "$logs/" 2>/dev/null
grep -E "went in a group|PASSED|FAILED" "$logs/fusion_hold_np3.log" | sort | uniq -c | sed 's/^/    /' >> "$summary"

wait $in_place
pack

# 2. The device path's own overhead at 1 rank, alone on the machine: both ways of running a blocking op,
# alternated.
for round in 1 2; do
  for drives in 1 0; do
    step "overhead_np1_drives${drives}_r$round" 120 env KOLO_CALLER_DRIVES=$drives mpirun -np 1 --bind-to none \
      "$build/benchmarks/gpu_allreduce" --max-bytes 67108864 --rounds 5 --row-seconds 0.4 --steps 10 \
      --json "$logs/overhead_np1_drives${drives}_r$round.json"
    grep -E "^ +(8|32|2048|131072|1048576|8388608|67108864) |kolo: |from 1 MiB|below 1 MiB" \
      "$logs/overhead_np1_drives${drives}_r$round.log" | sed "s/^/    drives=$drives r$round: /" >> "$summary"
  done
done
# How much of what kolo adds is NCCL's nonblocking mode itself (kolo's communicators are nonblocking).
step overhead_np1_peer_nonblocking 120 mpirun -np 1 --bind-to none "$build/benchmarks/gpu_allreduce" --max-bytes 67108864 \
  --rounds 5 --row-seconds 0.4 --steps 10 --peer-blocking 0 --json "$logs/overhead_np1_peer_nonblocking.json"
grep -E "^ +(8|32|2048|131072|1048576|8388608|67108864) |kolo: |from 1 MiB|below 1 MiB" \
  "$logs/overhead_np1_peer_nonblocking.log" | sed "s/^/    peer nonblocking: /" >> "$summary"
# An async op waited for at once (allreduce_async + wait): its waiter drives it where kolo's thread has not
# taken it up yet; with KOLO_CALLER_DRIVES=0, kolo's thread alone, which watches the work it launched.
for drives in 1 0; do
  step "overhead_np1_async_drives$drives" 60 env KOLO_CALLER_DRIVES=$drives mpirun -np 1 --bind-to none \
    "$build/benchmarks/gpu_allreduce" --max-bytes 1048576 --rounds 5 --row-seconds 0.2 --steps 3 --async 1 \
    --json "$logs/overhead_np1_async_drives$drives.json"
  grep -E "^ +(8|2048|131072|1048576) |below 1 MiB" "$logs/overhead_np1_async_drives$drives.log" |
    sed "s/^/    async, drives=$drives: /" >> "$summary"
done
for drives in 1 0; do
  step "timeline_np1_drives$drives" 60 env KOLO_CALLER_DRIVES=$drives KOLO_TIMELINE="$logs/timeline_np1_drives$drives.json" \
    KOLO_TIMELINE_MARK_CYCLES=1 mpirun -np 1 --bind-to none "$build/benchmarks/gpu_allreduce" --max-bytes 4096 \
    --rounds 1 --row-seconds 0.02 --steps 1
done
pack

# 4. While time is left: the 2-rank table and the synthetic benchmark beside DDP.
if [ "$(left)" -gt 90 ]; then
  step allreduce_np2 100 mpirun -np 2 --oversubscribe --bind-to none "$build/benchmarks/gpu_allreduce" \
    --max-bytes 67108864 --rounds 3 --row-seconds 0.5 --steps 5 --json "$logs/allreduce_np2.json"
  grep -E "^ +(8|2048|1048576|8388608|67108864) |kolo: |from 1 MiB|below 1 MiB" "$logs/allreduce_np2.log" |
    sed 's/^/    np2: /' >> "$summary"
fi
if [ "$(left)" -gt 90 ]; then
  step pytorch_synthetic 120 "$build/bin/kolorun" -np 2 -x PYTHONPATH="$build/python" "$python" \
    benchmarks/pytorch_synthetic.py --cuda --model resnet50 --batch-size 32 --num-iters 6 --json "$logs/pytorch_synthetic.json"
  tail -n 6 "$logs/pytorch_synthetic.log" | sed 's/^/    /' >> "$summary"
fi
# 5. While time is left: issue 35's CPU goals where every rank has a core of its own (the 2-core VMs share
# theirs among 4 and 8 ranks, and the scheduler decides those rows): a 4-byte allreduce beside
# MPI_Allreduce at 2, 4 and 8 ranks, and the ResNet-50 set beside one memcpy at 2 and 4 ranks.
for np in 2 4 8; do
  [ "$(left)" -gt 45 ] || break
  step "cpu_small_np$np" 40 mpirun -np $np --bind-to core "$build/benchmarks/small_allreduce" --bytes 4 \
    --iterations 3000 --with-another-in-flight 0
  grep -E "^4 B" "$logs/cpu_small_np$np.log" | sed "s/^/    cpu np$np: /" >> "$summary"
done
for np in 2 4; do
  [ "$(left)" -gt 60 ] || break
  step "cpu_resnet50_np$np" 60 mpirun -np $np --bind-to core "$build/benchmarks/resnet50_allreduce" --steps 10 --rounds 2
  grep -E "^kolo \(defaults\)|^one memcpy|/ one memcpy" "$logs/cpu_resnet50_np$np.log" | sed "s/^/    cpu np$np: /" >> "$summary"
done
if [ "${KOLO_GPU_SANITIZERS:-0}" = 1 ]; then
  step sanitizers 300 sh tools/gpu/run_gpu_suite.sh "$build"
fi
note "done"
