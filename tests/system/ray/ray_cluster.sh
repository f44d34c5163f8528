#!/bin/sh
# Run inside tests/system/cluster/cluster.sh: a Ray cluster of its emulated hosts (the head on the first,
# a worker node on each other, CPUS logical CPUs each), COMMAND run on the head host as the driver, and
# every Ray process stopped and its session folders removed on every exit path.
#
#   cluster.sh --hosts 2 -- tests/system/ray/ray_cluster.sh RAY_BIN_DIR CPUS COMMAND [ARGS...]
#
# With RAY_LATE_HOSTS=K, the last K hosts join only when the driver runs the command in RAY_CLUSTER_JOIN (a node
# joining a running cluster).
# The hosts share this machine's file system: each host's /tmp/ray (Ray's sockets and session folders)
# is a folder of its own, bound there in the host's mount namespace. PYTHONPATH passes through, and the
# driver finds the cluster through RAY_ADDRESS.
set -eu
bin=$1 cpus=$2; shift 2
dirs=$(mktemp -d /var/tmp/kolo-ray.XXXXXX)
address_of() { getent hosts "$1" | awk '{print $1; exit}'; }
on() {  # HOST COMMAND: on the host, with its own /tmp/ray
  host=$1; shift
  mkdir -p "$dirs/$host"
  "$CLUSTER_AGENT" "$host" "mkdir -p /tmp/ray && mount --bind $dirs/$host /tmp/ray && \
    export PYTHONPATH='${PYTHONPATH:-}' RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE=disabled && $*"
}
stop() {
  status=$?
  trap - EXIT INT TERM
  for host in $(echo "$CLUSTER_HOSTS" | tr ',' ' '); do on "$host" "$bin/ray stop --force >/dev/null 2>&1" || true; done
  rm -rf "$dirs"
  exit "$status"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

first=${CLUSTER_HOSTS%%,*}
head_ip=$(address_of "$first")
on "$first" "$bin/ray start --head --node-ip-address=$head_ip --port=6379 --num-cpus=$cpus --include-dashboard=false \
  --disable-usage-stats >/dev/null"
join="$dirs/join.sh"
echo "set -e" > "$join"
total=$(echo "$CLUSTER_HOSTS" | tr ',' '\n' | wc -l)
n=0
for host in $(echo "$CLUSTER_HOSTS" | tr ',' ' '); do
  n=$((n + 1))
  [ "$host" = "$first" ] && continue
  start="$bin/ray start --address=$head_ip:6379 --node-ip-address=$(address_of "$host") --num-cpus=$cpus --disable-usage-stats"
  if [ "$n" -gt $((total - ${RAY_LATE_HOSTS:-0})) ]; then
    # The driver runs this from the head host: the agent reaches the late host from there as from here.
    echo "mkdir -p $dirs/$host && $CLUSTER_AGENT $host \"mkdir -p /tmp/ray && mount --bind $dirs/$host /tmp/ray && export PYTHONPATH='${PYTHONPATH:-}' RAY_USAGE_STATS_ENABLED=0 RAY_AUTH_MODE=disabled && $start >/dev/null\"" >> "$join"
  else
    on "$host" "$start >/dev/null"
  fi
done
on "$first" "export RAY_ADDRESS=$head_ip:6379 RAY_CLUSTER_JOIN='sh $join'; $*"
