#!/bin/sh
# Brings up a real Slurm on the emulated hosts of cluster.sh: a munged and a slurmctld on this machine,
# a slurmd on each host (in its network, UTS and mount namespaces, so jobs there see that host's name,
# address and /dev/shm); runs a command with it up; then stops every daemon and removes their state,
# also on failure or Ctrl-C.
#
#   tests/system/cluster/cluster.sh --hosts H -- tests/system/cluster/slurm.sh [--cpus N] -- COMMAND [ARGS...]
#
# Each host offers N CPUs (default 2), so a job gets at most N tasks a host. COMMAND runs on this machine
# with SLURM_CONF set, so that sinfo, srun, salloc and sbatch use this Slurm (its one partition is the
# default). Its own ports and files only: a Slurm already on the machine is left alone.
# Needs Debian's slurm-wlm (slurmctld, slurmd, munge); without it says so and exits 77 (a skip).
set -eu

cpus=2
while [ $# -gt 0 ]; do
  case "$1" in
    --cpus) cpus=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--cpus N] -- COMMAND [ARGS...] (inside tests/system/cluster/cluster.sh)" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "slurm.sh: no command given" >&2; exit 2; }
[ -n "${CLUSTER_HOSTS:-}" ] || { echo "slurm.sh: run it inside tests/system/cluster/cluster.sh" >&2; exit 2; }
for tool in slurmctld slurmd munged srun sbatch sinfo; do
  command -v "$tool" >/dev/null 2>&1 || PATH="$PATH:/usr/sbin" command -v "$tool" >/dev/null 2>&1 || {
    echo "slurm.sh: skipping: $tool is not installed (apt-get install slurm-wlm)" >&2; exit 77; }
done
PATH="$PATH:/usr/sbin"

work=$(mktemp -d /var/tmp/kolo-slurm.XXXXXX)
chmod 755 "$work"
conf="$work/slurm.conf"

stop() {  # stop PIDFILE: TERM, then KILL after 10 s
  [ -s "$1" ] || return 0
  pid=$(cat "$1")
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -9 "$pid" 2>/dev/null || true
}
cleanup() {
  status=$?
  trap - EXIT INT TERM
  # Jobs first (their steps end with them), then the daemons, then their state.
  if [ -s "$work/slurmctld.pid" ]; then SLURM_CONF="$conf" timeout 10 scancel --quiet --full --user=root 2>/dev/null || true; fi
  for host in $(echo "$CLUSTER_HOSTS" | tr , ' '); do stop "$work/$host.pid"; done
  stop "$work/slurmctld.pid"
  stop "$work/munged.pid"
  if [ "$status" -ne 0 ]; then
    for log in "$work"/*.log; do [ -s "$log" ] && { echo "== $log (last lines)"; tail -n 15 "$log"; } >&2; done
  fi
  rm -rf "$work"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# munge: a key of this run's own, and a munged on a socket of its own.
dd if=/dev/urandom of="$work/munge.key" bs=1024 count=1 2>/dev/null
chmod 400 "$work/munge.key"
munged --force --socket="$work/munge.socket" --key-file="$work/munge.key" --pid-file="$work/munged.pid" \
  --seed-file="$work/munged.seed" --log-file="$work/munged.log"

# A port of this run's own for slurmctld (from the cluster's subnet number); slurmd's default port is
# free in each host's namespace.
id=$(echo "$CLUSTER_SUBNET" | cut -d. -f3)
nodes=""
for host in $(echo "$CLUSTER_HOSTS" | tr , ' '); do
  address=$(getent hosts "$host" | cut -d' ' -f1)
  nodes="${nodes}NodeName=$host NodeAddr=$address CPUs=$cpus State=UNKNOWN
"
done
cat > "$conf" <<EOF
ClusterName=kolo$id
SlurmctldHost=$(hostname -s)($CLUSTER_BRIDGE_ADDRESS)
SlurmctldPort=$((17000 + id))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge.socket
CredType=cred/munge
StateSaveLocation=$work/slurmctld
SlurmdSpoolDir=$work/%n
TmpFS=$work/%n
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/%n.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
MpiDefault=none
ReturnToService=2
KillWait=5
MinJobAge=2
$nodes
PartitionName=kolo Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$conf"

slurmctld -f "$conf"
for host in $(echo "$CLUSTER_HOSTS" | tr , ' '); do
  mkdir -p "$work/$host"
  # As cluster.sh's agent enters a host, but through nsenter rather than ip netns exec, whose fresh /sys
  # lacks the cgroup file systems that slurmd needs.
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin nsenter --net="/run/netns/$host" unshare --uts --mount /bin/sh -c \
    "hostname $host; mount --bind $CLUSTER_SHM_DIR/$host /dev/shm; exec slurmd -f $conf -N $host"
done

# Every node idle, or give up after 30 s.
want=$(echo "$CLUSTER_HOSTS" | tr , '\n' | wc -l)
for _ in $(seq 1 300); do
  idle=$(sinfo --noheader --Node --states=idle --format=%N 2>/dev/null | sort -u | wc -l)
  [ "$idle" -eq "$want" ] && break
  sleep 0.1
done
if [ "$idle" -ne "$want" ]; then
  echo "slurm.sh: only $idle of $want nodes became idle within 30 s:" >&2
  sinfo --Node --long >&2 || true
  exit 1
fi

"$@"
