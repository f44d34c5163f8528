#!/bin/sh
# Builds containers/cpu.Dockerfile with a Docker engine and runs in the image the jobs docs/containers.md
# shows: the image's own command (2 ranks under kolorun) with /dev/shm of 1 GB, Docker's default 64 MB and
# 1 MB (too small for kolo's segment: kolo warns and goes through MPI), 4 ranks, plain mpirun as root with
# and without the image's OMPI_ALLOW_RUN_AS_ROOT variables, kolorun --gloo, and two containers that meet
# without MPI on a network of their own (one rank each from RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT; then
# torchrun in each, 2 ranks each). Each step's time and outcome is printed at the end; it stops at the
# first step that fails.
#
#   sh tools/containers/try_cpu_dockerfile.sh
#
# Needs a running Docker engine (`docker info`) and a few GB of disk. Too slow for CI (minutes: it installs
# Debian's packages and torch, and builds kolo); .ci/run does not run it.
#
# The base image is debian:12 where it can be had (present, or `docker pull`). Where no registry is reachable
# and debootstrap is installed, a Debian 12 root made with `debootstrap --variant=minbase bookworm` from
# Debian's archive is imported in its place (kolo-try-base:debian12), with this host's own CA certificates
# (/usr/local/share/ca-certificates) added, so that a TLS proxy this host trusts is trusted inside too.
#
# Settings from the environment:
#   IMAGE            the image's tag (kolo:cpu)
#   TORCH_INDEX_URL  passed to the build where set (the Dockerfile's default is PyTorch's CPU index;
#                    https://pypi.org/simple takes PyPI's torch)
#   WORK             scratch folder for the Debian root (/var/tmp/kolo-containers)
set -eu
cd "$(dirname "$0")/../.."
IMAGE=${IMAGE:-kolo:cpu}
WORK=${WORK:-/var/tmp/kolo-containers}
NET=kolo-try-net
SUMMARY=$(mktemp)
OUT=$(mktemp)

cleanup() {
  docker rm -f kolo-try-r0 kolo-try-r1 >/dev/null 2>&1 || true
  docker network rm "$NET" >/dev/null 2>&1 || true
  echo
  echo "=== summary"
  cat "$SUMMARY"
  rm -f "$OUT" "$SUMMARY"
}
trap cleanup EXIT

# step NAME COMMAND...: runs it, its output in $OUT (and on the terminal), its time and status in the summary.
step() {
  name=$1
  shift
  echo "=== $name: $*"
  start=$(date +%s)
  set +e
  "$@" >"$OUT" 2>&1
  rc=$?
  set -e
  cat "$OUT"
  echo "$name: exit $rc, $(($(date +%s) - start)) s" >>"$SUMMARY"
  return $rc
}

# expect PATTERN: the last step's output has it (a grep -E pattern), else the script fails, naming it.
expect() {
  if ! grep -Eq "$1" "$OUT"; then
    echo "expected /$1/ in the output above" >&2
    exit 1
  fi
  echo "   found: $(grep -E "$1" "$OUT" | tail -1)" >>"$SUMMARY"
}

docker info >/dev/null 2>&1 || { echo "no Docker engine answers (docker info): start dockerd first" >&2; exit 1; }

base=debian:12
if ! docker image inspect "$base" >/dev/null 2>&1 && ! docker pull "$base" >/dev/null 2>&1; then
  base=kolo-try-base:debian12
  if ! docker image inspect "$base" >/dev/null 2>&1; then
    command -v debootstrap >/dev/null || { echo "debian:12 cannot be pulled, and debootstrap is missing" >&2; exit 1; }
    root=$WORK/bookworm
    rm -rf "$root"
    mkdir -p "$WORK"
    step debootstrap debootstrap --variant=minbase bookworm "$root" http://deb.debian.org/debian
    if ls /usr/local/share/ca-certificates/*.crt >/dev/null 2>&1; then
      mkdir -p "$root/usr/local/share/ca-certificates"
      cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
    fi
    # The build's pip then trusts Debian's CA bundle, which update-ca-certificates builds with those added.
    tar -C "$root" -c . | docker import --change 'CMD ["bash"]' \
      --change 'ENV PIP_CERT=/etc/ssl/certs/ca-certificates.crt' - "$base"
    rm -rf "$root"
  fi
fi
echo "base image: $base" >>"$SUMMARY"

set -- --build-arg BASE="$base"
[ -n "${TORCH_INDEX_URL:-}" ] && set -- "$@" --build-arg TORCH_INDEX_URL="$TORCH_INDEX_URL"
step build docker build -f containers/cpu.Dockerfile -t "$IMAGE" "$@" .
echo "image $IMAGE: $(docker image inspect -f '{{.Size}}' "$IMAGE" | awk '{printf "%.2f GB", $1 / 1e9}')" >>"$SUMMARY"

# The image's command: kolorun -np 2 on the digits example.
step run-default docker run --rm --shm-size=1g "$IMAGE"
expect "epoch 15 .*test accuracy 0\.9[0-9]*"
# Docker's default /dev/shm (64 MB) holds kolo's segment (4 MiB for 2 ranks) and Open MPI's.
step run-shm-64m docker run --rm "$IMAGE"
expect "epoch 15 .*test accuracy 0\.9[0-9]*"
if grep -q "no shared memory among" "$OUT"; then echo "kolo fell back at 64 MB" >&2; exit 1; fi
# Too small for kolo's segment: kolo warns and goes through MPI; the job still trains.
step run-shm-1m docker run --rm --shm-size=1m "$IMAGE"
expect "no shared memory among this host's 2 ranks"
expect "epoch 15 .*test accuracy 0\.9[0-9]*"
# 4 ranks in Docker's default /dev/shm: no warning from kolo, none from Open MPI (the image turns off its
# single-copy transfers, which Docker's seccomp profile denies).
step run-4-ranks docker run --rm "$IMAGE" kolorun -np 4 python examples/pytorch/digits_kolo.py --epochs 3
expect "epoch  3 .*test accuracy"
if grep -Eq "no shared memory among|Read -1" "$OUT"; then echo "a warning at 4 ranks" >&2; exit 1; fi
# Plain mpirun as root without the image's OMPI_ALLOW_RUN_AS_ROOT variables is refused; with them it runs.
step run-mpirun-unset docker run --rm -e OMPI_ALLOW_RUN_AS_ROOT= -e OMPI_ALLOW_RUN_AS_ROOT_CONFIRM= "$IMAGE" \
  mpirun -np 2 python -c pass || true
expect "mpirun has detected an attempt to run as root"
step run-mpirun docker run --rm --shm-size=1g "$IMAGE" \
  mpirun -np 2 --bind-to none python examples/pytorch/digits_kolo.py --epochs 3
expect "epoch  3 .*test accuracy"
# No MPI: kolorun --gloo starts both ranks in the container.
step run-gloo docker run --rm --shm-size=1g "$IMAGE" kolorun --gloo -np 2 python examples/pytorch/digits_kolo.py
expect "epoch 15 .*test accuracy 0\.9[0-9]*"

# Two containers on a network of their own, meeting through a store at MASTER_ADDR:MASTER_PORT without MPI:
# one rank each (rank 0 serves the store), then 2 ranks each under torchrun (its agent serves it).
two_containers() {
  docker network create "$NET" >/dev/null
  for r in 0 1; do
    docker run -d --name kolo-try-r$r --hostname r$r --network "$NET" --shm-size=1g \
      -e MASTER_ADDR=kolo-try-r0 -e MASTER_PORT=29500 -e RANK=$r -e WORLD_SIZE=2 "$IMAGE" "$@" >/dev/null
  done
  rc=0
  for r in 0 1; do
    [ "$(docker wait kolo-try-r$r)" = 0 ] || rc=1
    echo "--- kolo-try-r$r"
    docker logs kolo-try-r$r 2>&1
  done
  docker rm -f kolo-try-r0 kolo-try-r1 >/dev/null
  docker network rm "$NET" >/dev/null
  return $rc
}
step two-containers two_containers python examples/pytorch/digits_kolo.py
expect "epoch 15 .*test accuracy 0\.9[0-9]*"
step two-containers-torchrun two_containers sh -c 'exec torchrun --nnodes 2 --nproc-per-node 2 --node-rank $RANK \
  --master-addr $MASTER_ADDR --master-port $MASTER_PORT examples/pytorch/digits_kolo.py'
expect "epoch 15 .*test accuracy 0\.9[0-9]*"
echo "all steps passed" >>"$SUMMARY"
