#!/bin/sh
# Brings up H emulated hosts on this machine (network namespaces joined by a bridge, each with its
# own hostname and a /dev/shm that lasts as long as the cluster), runs a command across them, and
# tears everything down on exit, also on failure or Ctrl-C.
#
#   tests/system/cluster/cluster.sh [--hosts H] [--rate-mbit MBIT] [--delay DELAY] -- COMMAND [ARGS...]
#
# --rate-mbit caps every host's link at MBIT Mbit/s each way (tc tbf); --delay adds latency each
# way (tc netem, e.g. --delay 1ms; not every kernel has netem). COMMAND runs in the root namespace
# with these variables set:
#   CLUSTER_HOSTS   the host names, comma separated (e.g. kc5-1,kc5-2)
#   CLUSTER_AGENT   the rsh agent that runs a command on a host (for mpirun's plm_rsh_agent, or
#                        kolorun's --rsh-agent), in a fresh login's environment as ssh would
#   CLUSTER_SUBNET  the hosts' subnet (for btl_tcp_if_include / oob_tcp_if_include, or kolorun's
#                        --network-interface)
#   CLUSTER_BRIDGE_ADDRESS  this machine's own address in that subnet (where the hosts reach it)
#   CLUSTER_SHM_DIR  holds each host's /dev/shm, as CLUSTER_SHM_DIR/HOST
#   CLUSTER_MPIRUN_ARGS  all of the above as mpirun options (add -np and -H)
# Needs root and iproute2 (ip netns, tc); without them it says so and exits 77, which ctest reports as
# a skip.
set -eu

hosts=2 rate="" delay=""
while [ $# -gt 0 ]; do
  case "$1" in
    --hosts) hosts=$2; shift 2 ;;
    --rate-mbit) rate=$2; shift 2 ;;
    --delay) delay=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 [--hosts H] [--rate-mbit MBIT] [--delay DELAY] -- COMMAND [ARGS...]" >&2; exit 2 ;;
  esac
done
[ $# -gt 0 ] || { echo "cluster.sh: no command given" >&2; exit 2; }

skip() { echo "cluster.sh: skipping: $*" >&2; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "emulating hosts needs root (network namespaces); run as root"
command -v ip >/dev/null 2>&1 || skip "iproute2's ip is not installed (apt-get install iproute2)"
command -v unshare >/dev/null 2>&1 || skip "unshare (util-linux) is not installed"
if [ -n "$rate$delay" ] && ! command -v tc >/dev/null 2>&1; then skip "tc (iproute2) is not installed"; fi

# Names and addresses unique to this run: an id (20-219) whose names no run holds, whether alive beside this
# one or dead and left behind (a run killed by SIGKILL tears nothing down). Creating the bridge claims the id,
# atomically against a run beside; a collision moves on to the next. CLUSTER_FIRST_ID sets the first id tried
# (for tests); by default it comes from the PID.
taken() {  # ID: whether a link, namespace or address of that id exists
  ip -o link show 2>/dev/null | grep -Eq "^[0-9]+: kc$1(br|v[0-9]+)[@:]" ||
    ip netns list 2>/dev/null | grep -Eq "^kc$1-[0-9]+( |\$)" ||
    ip -4 -o addr show 2>/dev/null | grep -q " 10\.231\.$1\."
}
id=""
first=${CLUSTER_FIRST_ID:-$(( $$ % 200 + 20 ))}
for try in $(seq 0 199); do
  candidate=$(( (first - 20 + try) % 200 + 20 ))
  if ! taken "$candidate" && ip link add "kc${candidate}br" type bridge 2>/dev/null; then id=$candidate; break; fi
done
[ -n "$id" ] || { echo "cluster.sh: every id (20-219) is taken by a cluster running or left behind (ip link; ip netns)" >&2; exit 1; }
prefix="kc$id"
bridge="${prefix}br"
subnet="10.231.$id.0/24"
work_dir=$(mktemp -d /var/tmp/kolo-cluster.XXXXXX)  # not /tmp: Open MPI's session files live there
hosts_marker="# kolo-cluster $prefix"
forward_rule=""  # the firewall rule this run added, if any (removed at the end)

cleanup() {
  status=$?
  trap - EXIT INT TERM
  for i in $(seq 1 "$hosts"); do
    ns="$prefix-$i"
    if ip netns list 2>/dev/null | grep -qw "$ns"; then
      for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -9 "$pid" 2>/dev/null || true; done
      ip netns del "$ns" 2>/dev/null || true
    fi
    ip link del "${prefix}v$i" 2>/dev/null || true
    umount "$work_dir/shm/$ns" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
  [ -z "$forward_rule" ] || iptables -D FORWARD $forward_rule 2>/dev/null || true
  if grep -q "$hosts_marker" /etc/hosts 2>/dev/null; then
    grep -v "$hosts_marker" /etc/hosts > "$work_dir/hosts" && cat "$work_dir/hosts" > /etc/hosts
  fi
  rm -rf "$work_dir"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

ip addr add "10.231.$id.254/24" dev "$bridge"
ip link set "$bridge" up
# Where the host's firewall drops forwarded packets (a Docker engine sets FORWARD's policy to DROP, and bridged
# traffic passes it), the hosts' own traffic is let through, for this run only.
if command -v iptables >/dev/null 2>&1 && iptables -S FORWARD 2>/dev/null | grep -q "^-P FORWARD DROP"; then
  forward_rule="-s $subnet -d $subnet -j ACCEPT"
  iptables -I FORWARD 1 $forward_rule
fi
names=""
for i in $(seq 1 "$hosts"); do
  ns="$prefix-$i" veth="${prefix}v$i" address="10.231.$id.$i"
  ip netns add "$ns"
  ip link add "$veth" type veth peer name eth0 netns "$ns"
  ip link set "$veth" master "$bridge" up
  ip netns exec "$ns" ip addr add "$address/24" dev eth0
  ip netns exec "$ns" ip link set eth0 up
  ip netns exec "$ns" ip link set lo up
  # Both directions: into the host on its bridge side, out of it inside.
  for side in "" "ip netns exec $ns"; do
    dev=$veth
    [ -z "$side" ] || dev=eth0
    if [ -n "$delay" ]; then
      $side tc qdisc add dev "$dev" root handle 1: netem delay "$delay" ||
        { echo "cluster.sh: tc netem failed (this kernel may lack sch_netem); --delay needs it" >&2; exit 1; }
      parent="parent 1:1"
    else
      parent="root"
    fi
    # tbf's bucket holds 10 ms of traffic (at least 64 KB), so the rate holds without starving TCP.
    [ -z "$rate" ] || $side tc qdisc add dev "$dev" $parent handle 10: tbf rate "${rate}mbit" \
      burst $(( rate * 1250 > 65536 ? rate * 1250 : 65536 )) latency 50ms
  done
  echo "$address $ns $hosts_marker" >> /etc/hosts
  # The host's /dev/shm: one tmpfs that outlives each command run there, as a real host's does.
  mkdir -p "$work_dir/shm/$ns" && mount -t tmpfs none "$work_dir/shm/$ns"
  names="${names:+$names,}$ns"
done

# The rsh agent: Open MPI calls it as `agent [options] HOST COMMAND...`, like ssh.
agent="$work_dir/agent"
cat > "$agent" <<'AGENT'
#!/bin/sh
while [ $# -gt 0 ]; do case "$1" in -*) shift ;; *) break ;; esac; done
host=$1; shift
# Its own hostname and /dev/shm: Open MPI's shared-memory transport would otherwise mix hosts up.
shm="$(dirname "$0")/shm/$host"
# A fresh login's environment, as sshd gives one: what a job needs on the other hosts must be sent.
exec env -i HOME="$HOME" USER="$(id -un)" LOGNAME="$(id -un)" SHELL=/bin/sh \
  PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  ip netns exec "$host" unshare --uts --mount /bin/sh -c "hostname $host; mount --bind $shm /dev/shm; $*"
AGENT
chmod +x "$agent"

export CLUSTER_HOSTS="$names" CLUSTER_AGENT="$agent" CLUSTER_SUBNET="$subnet" CLUSTER_BRIDGE_ADDRESS="10.231.$id.254" \
  CLUSTER_SHM_DIR="$work_dir/shm"
export CLUSTER_MPIRUN_ARGS="--mca plm_rsh_agent $agent --mca btl_tcp_if_include $subnet --mca oob_tcp_if_include $subnet"
"$@"
