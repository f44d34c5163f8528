#!/bin/sh
# The C++ example on 1, 2 and 4 ranks prints the very loss of the single-process version.
# Usage: same_loss.sh SINGLE_PROCESS_BINARY DISTRIBUTED_BINARY MPIEXEC
set -eu
single=$1 distributed=$2 mpiexec=$3
expected=$("$single")
for np in 1 2 4; do
  got=$("$mpiexec" -np "$np" --oversubscribe "$distributed")
  if [ "$got" != "$expected" ]; then
    printf 'on %s ranks the example printed:\n%s\nbut one process printed:\n%s\n' "$np" "$got" "$expected" >&2
    exit 1
  fi
  echo "$np ranks: $(echo "$got" | tail -n 1) (same as one process)"
done
