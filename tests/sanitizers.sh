#!/bin/sh
# Builds kolo with sanitizers (clang) and runs the unit and MPI suites under them.
#
#   tests/sanitizers.sh asan    AddressSanitizer + UndefinedBehaviorSanitizer (+ LeakSanitizer), build-asan/
#   tests/sanitizers.sh tsan    ThreadSanitizer, build-tsan/
#   tests/sanitizers.sh fuzz    libFuzzer on the negotiation decoder for FUZZ_SECONDS (default 60), build-asan/
#   tests/sanitizers.sh all     the three (the default)
#
# Needs clang and its sanitizer runtimes (Debian: clang libclang-rt-14-dev), which it installs if missing.
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)

need_clang() {
  if ! command -v clang++ >/dev/null 2>&1 || ! dpkg-query -W -f='${Status}' libclang-rt-14-dev 2>/dev/null | grep -q "ok installed"; then
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends clang libclang-rt-14-dev
  fi
}

configure() {  # DIR SANITIZER [extra cmake args]
  dir=$1 sanitizer=$2; shift 2
  # Line tables only: a sanitizer's report still names file and line, and the build takes about half the time
  # that full debug information does (two of these builds are most of CI's sanitizer stage).
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -gline-tables-only -DNDEBUG" -DKOLO_SANITIZE="$sanitizer" -DKOLO_BUILD_PYTHON=OFF -DKOLO_BUILD_BENCHMARKS=OFF -DKOLO_WITH_CUDA=OFF "$@" >/dev/null
  cmake --build "$dir" -j "$(nproc)"
}

# The suites: unit tests and everything under mpirun except the Python ones (the interpreter is not
# built with sanitizers), the GPU path through the host double and the Gloo world included. The MPI and
# GPU suites run at 2 ranks, the load test at 4 (SANITIZER_RANKS=1-4 for every count: the 3-rank suites add
# about five minutes to CI's budget, and the 4-rank one over three under TSan on two cores); the load test
# runs shorter here: sanitizers slow it several times.
ranks=${SANITIZER_RANKS:-2}
suites="^(unit|kolorun_args|mpi_np[$ranks]|gloo_np2|app_mpi_np2|app_mpi_funneled_np2|example_cpp_same_loss|load_np4|gpu_double_np[$ranks])\$"

asan() {
  need_clang
  configure build-asan address -DKOLO_FUZZ=ON
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1:fast_unwind_on_malloc=0"
  export LSAN_OPTIONS="suppressions=$root/tests/cpp/sanitizers/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
  LD_PRELOAD="$root/build-asan/tests/libkolo_keep_modules.so" ctest --test-dir build-asan --output-on-failure -R "$suites"
}

tsan() {
  need_clang
  configure build-tsan thread
  export TSAN_OPTIONS="suppressions=$root/tests/cpp/sanitizers/tsan.supp:halt_on_error=1:second_deadlock_stack=1"
  ctest --test-dir build-tsan --output-on-failure -R "$suites" -E '^gloo_np2$'
  # The Gloo world's suite without the cases whose threads are the MPI world's (each dtype's kernels, Adasum, the
  # autotuner's runs: mpi_np2 has them under ThreadSanitizer, gloo_np2 under AddressSanitizer): what this world adds
  # is its controller's and store's threads, which every remaining case drives. About a third of the whole suite's time.
  GTEST_FILTER='-Dtypes/*:Floating/*:Adasum.*:Bool.*:Topology.*:NoGpu.*:Autotune.*' \
    ctest --test-dir build-tsan --output-on-failure -R '^gloo_np2$'
}

fuzz() {
  need_clang
  configure build-asan address -DKOLO_FUZZ=ON
  corpus=build-asan/wire_corpus
  mkdir -p "$corpus"
  build-asan/tests/make_wire_corpus "$corpus"
  ASAN_OPTIONS="detect_leaks=1" build-asan/tests/kolo_wire_fuzzer -max_total_time="${FUZZ_SECONDS:-60}" \
    -print_final_stats=1 "$corpus"
}

case "${1:-all}" in
  asan) asan ;;
  tsan) tsan ;;
  fuzz) fuzz ;;
  all) asan; tsan; fuzz ;;
  *) echo "usage: $0 [asan|tsan|fuzz|all]" >&2; exit 2 ;;
esac
