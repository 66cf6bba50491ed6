#!/usr/bin/env bash
# A real Slurm cluster on this machine for the tests, bounded in time and removed after:
# munged, slurmctld and one slurmd per node, every node a network namespace of its own
# (eth0 on a private bridge, its own host name and /etc/hosts), all state under DIR.
#
#   test_cluster.sh up DIR NODES [CPUS_PER_NODE]   start; returns once every node is idle
#   test_cluster.sh exec DIR -- COMMAND...         run a client command (srun, sbatch, dtrain ...)
#                                                  on node1 with SLURM_CONF set
#   test_cluster.sh down DIR                       stop everything, remove namespaces and links
#
# Needs root and Debian's slurmctld, slurmd, slurm-client and munge (scripts/setup). The node
# daemons are entered with nsenter rather than `ip netns exec`, which remounts /sys and so hides
# the cgroup mounts slurmd insists on; /etc/hosts is bind-mounted in a private mount namespace.
set -euo pipefail

usage() { echo "usage: $0 up DIR NODES [CPUS] | exec DIR -- CMD... | down DIR" >&2; exit 2; }
[ $# -ge 2 ] || usage
action=$1 dir=$2
shift 2

# Names private to this cluster: its directory's inode keeps two clusters apart.
names() {
  id=$(printf '%x' "$(stat -c %i "$dir")" | tail -c 6)
  bridge="dsb$id"
  ns_prefix="dsl$id-"
}

# Runs "$@" inside node N's namespaces (network, host name, /etc/hosts).
on_node() {
  local node=$1
  shift
  nsenter --net="/run/netns/${ns_prefix}$node" unshare --uts --mount --propagation private \
    sh -c 'mount --bind "$1" /etc/hosts && hostname "$2" && shift 2 && exec "$@"' sh "$dir/hosts" "$node" "$@"
}

up() {
  local nodes=$1 cpus=${2:-4}
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  names
  mkdir -p "$dir"/{state,log,munge,spool}
  echo "$nodes" >"$dir/nodes"
  ip link add "$bridge" type bridge
  ip link set "$bridge" up
  printf '127.0.0.1 localhost\n' >"$dir/hosts"
  local i
  for ((i = 1; i <= nodes; i++)); do
    local ns="${ns_prefix}node$i"
    ip netns add "$ns"
    ip link add "${bridge}v$i" type veth peer name eth0 netns "$ns"
    ip link set "${bridge}v$i" master "$bridge" up
    ip -n "$ns" addr add "10.214.0.$i/24" dev eth0
    ip -n "$ns" link set eth0 up
    ip -n "$ns" link set lo up
    printf '10.214.0.%d node%d\n' "$i" "$i" >>"$dir/hosts"
    mkdir -p "$dir/spool/node$i"
  done

  dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/munge/munge.key"
  munged --key-file="$dir/munge/munge.key" --socket="$dir/munge/socket" --pid-file="$dir/munge/pid" \
    --log-file="$dir/munge/log" --seed-file="$dir/munge/seed" --force

  cat >"$dir/slurm.conf" <<CONF
ClusterName=dtraintest
SlurmctldHost=node1(10.214.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/munge/socket
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SchedulerType=sched/builtin
SelectType=select/linear
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
SlurmctldPort=6817
SlurmdPort=6818
SlurmdTimeout=30
InactiveLimit=0
KillWait=5
MinJobAge=600
NodeName=node[1-$nodes] CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=node[1-$nodes] Default=YES MaxTime=INFINITE State=UP
CONF
  echo "CgroupPlugin=cgroup/v1" >"$dir/cgroup.conf"

  on_node node1 slurmctld -f "$dir/slurm.conf" -i
  for ((i = 1; i <= nodes; i++)); do on_node "node$i" slurmd -f "$dir/slurm.conf" -N "node$i"; done

  local deadline=$((SECONDS + 60)) states=""
  while ((SECONDS < deadline)); do
    states=$(SLURM_CONF="$dir/slurm.conf" on_node node1 sinfo -h -N -o %T 2>/dev/null | sort -u | tr '\n' ' ' || true)
    [ "$states" = "idle " ] && return 0
    sleep 0.5
  done
  echo "test_cluster.sh: the nodes did not become idle within 60 s (states: ${states:-none}); logs in $dir/log" >&2
  return 1
}

do_exec() {
  dir=$(cd "$dir" && pwd)
  names
  [ "${1:-}" = "--" ] && shift
  SLURM_CONF="$dir/slurm.conf" on_node node1 "$@"
}

down() {
  [ -d "$dir" ] || return 0
  dir=$(cd "$dir" && pwd)
  names
  local nodes i
  nodes=$(cat "$dir/nodes" 2>/dev/null || echo 0)
  for ((i = 1; i <= nodes; i++)); do
    local ns="${ns_prefix}node$i"
    pids=$(ip netns pids "$ns" 2>/dev/null || true)
    [ -n "$pids" ] && kill -9 $pids 2>/dev/null || true
  done
  [ -f "$dir/munge/pid" ] && kill "$(cat "$dir/munge/pid")" 2>/dev/null || true
  for ((i = 1; i <= nodes; i++)); do
    ip netns del "${ns_prefix}node$i" 2>/dev/null || true
    ip link del "${bridge}v$i" 2>/dev/null || true
  done
  ip link del "$bridge" 2>/dev/null || true
}

case "$action" in
  up) [ $# -ge 1 ] || usage; up "$@" ;;
  exec) do_exec "$@" ;;
  down) down ;;
  *) usage ;;
esac
