#!/usr/bin/env bash
# shellcheck disable=SC2015 # "test && test || die" is intended: die when either test fails
# A multi-host "cluster" on one Linux machine, made of network + UTS namespaces (root only, no sshd).
#
#   netns_cluster.sh up N PREFIX WORKDIR     N hosts PREFIX0..PREFIX{N-1}, state in WORKDIR; prints the
#                                            `export NETNS_CLUSTER_WORKDIR=...` line callers need
#   netns_cluster.sh run I CMD...            CMD on host I (its netns, its hostname, its /etc/hosts)
#   netns_cluster.sh pids I                  PIDs of every process living in host I's network namespace
#   netns_cluster.sh slurm_up WORKDIR        munged + slurmctld on host 0, one slurmd per host; waits for idle
#   netns_cluster.sh mpirun_flags            the MCA flags mpirun needs here (one per word, for $(...))
#   netns_cluster.sh down WORKDIR            kills everything in the hosts, deletes the namespaces
#
# `run`, `pids` and `mpirun_flags` find the cluster through $NETNS_CLUSTER_WORKDIR (exported for every
# command run on a host, so nested calls - the Open MPI agent, slurmd's tasks - find it too).
#
# Layout (all addresses live only inside namespaces this script creates; the root namespace is not touched):
#   netns PREFIXsw   the "switch": a bridge br0, one veth port pI per host (no address)
#   netns PREFIXI    host I: lo up, eth0 = 10.213.0.(I+1)/24 (peer of pI, created directly in the namespaces)
#   WORKDIR/uts/I    a persistent UTS namespace for host I (bind-mounted nsfs file), hostname PREFIXI
#   WORKDIR/hosts    an /etc/hosts for the cluster; `run` bind-mounts it over /etc/hosts in a private mount
#                    namespace, so the machine's /etc/hosts is never edited
# Exit 77 with one line when the machine does not allow this (not root, no netns, no UTS namespaces...).
set -uo pipefail

NETNS_CLUSTER_NET=${NETNS_CLUSTER_NET:-10.213.0}   # the /24 of the hosts; the MCA filters use 10.213.0.0/16
self=$(readlink -f "${BASH_SOURCE[0]}")
here=$(dirname "$self")

nc_skip() { echo "netns_cluster: NOT RUN: $*" >&2; exit 77; }
nc_die() { echo "netns_cluster: ERROR: $*" >&2; exit 1; }

# nc_load WORKDIR: read the cluster description written by `up`.
nc_load() {
  local w=${1:-${NETNS_CLUSTER_WORKDIR:-}}
  [ -n "$w" ] || nc_die "no cluster: set NETNS_CLUSTER_WORKDIR (printed by 'up')"
  [ -f "$w/cluster.env" ] || nc_die "no cluster in $w (no cluster.env)"
  # shellcheck disable=SC1091
  . "$w/cluster.env"   # NC_N NC_PREFIX NC_WORK NC_NET
}

nc_addr() { echo "$NC_NET.$(($1 + 1))"; }

# ---- up -------------------------------------------------------------------------------------------------------
nc_up() {
  local n=$1 prefix=$2 work=$3 i
  [[ $n =~ ^[0-9]+$ ]] && [ "$n" -ge 1 ] && [ "$n" -le 250 ] || nc_die "N must be 1..250, got '$n'"
  [[ $prefix =~ ^[a-z][a-z0-9-]{0,8}$ ]] || nc_die "PREFIX must be [a-z][a-z0-9-]{0,8} (netns/ifname limits)"
  [ "$(id -u)" = 0 ] || nc_skip "network namespaces need root; this is $(id -un)"
  for tool in ip unshare nsenter mount umount; do
    command -v "$tool" >/dev/null || nc_skip "missing tool: $tool"
  done
  mkdir -p "$work" || nc_die "cannot create $work"
  work=$(cd "$work" && pwd)
  [ -e "$work/cluster.env" ] && nc_die "$work already holds a cluster (run 'down $work' first)"
  for i in sw $(seq 0 $((n - 1))); do
    [ -e "/run/netns/$prefix$i" ] && nc_die "network namespace $prefix$i already exists (another cluster?)"
  done
  # Written first, so that `down` can clean up whatever part of `up` succeeded.
  cat >"$work/cluster.env" <<EOF
NC_N=$n
NC_PREFIX=$prefix
NC_WORK=$work
NC_NET=$NETNS_CLUSTER_NET
EOF
  nc_load "$work"
  # Ctrl-C (or a TERM) in the middle of `up`: tear down the part already built.
  trap 'nc_down "$work" >/dev/null 2>&1; exit 130' INT TERM
  # Any failure below: undo what was done. 77 for a missing capability, 1 otherwise.
  nc_up_fail() { rm -f "$work/up.err"; nc_down "$work" >/dev/null 2>&1; if [ "$1" = 77 ]; then nc_skip "$2"; else nc_die "$2"; fi; }

  ip netns add "${prefix}sw" 2>"$work/up.err" ||
    nc_up_fail 77 "cannot create network namespaces: ip netns add failed: $(head -c 200 "$work/up.err")"
  ip -n "${prefix}sw" link set lo up
  ip -n "${prefix}sw" link add br0 type bridge 2>"$work/up.err" ||
    nc_up_fail 77 "cannot create a bridge in a namespace (bridge module?): $(head -c 200 "$work/up.err")"
  ip -n "${prefix}sw" link set br0 up
  mkdir -p "$work/uts"
  {
    echo "127.0.0.1 localhost"
    echo "::1 localhost ip6-localhost ip6-loopback"
  } >"$work/hosts"
  for i in $(seq 0 $((n - 1))); do
    local h=$prefix$i
    ip netns add "$h" 2>"$work/up.err" || nc_up_fail 77 "ip netns add $h failed: $(head -c 200 "$work/up.err")"
    # The veth pair is created inside the switch namespace with its peer put straight into the host
    # namespace: nothing ever appears in the root namespace.
    ip -n "${prefix}sw" link add "p$i" type veth peer name eth0 netns "$h" 2>"$work/up.err" ||
      nc_up_fail 77 "cannot create a veth pair (veth module?): $(head -c 200 "$work/up.err")"
    ip -n "${prefix}sw" link set "p$i" master br0 up || nc_up_fail 1 "cannot attach p$i to the bridge"
    ip -n "$h" link set lo up || nc_up_fail 1 "lo up in $h"
    ip -n "$h" addr add "$(nc_addr "$i")/24" dev eth0 || nc_up_fail 1 "address on $h"
    ip -n "$h" link set eth0 up || nc_up_fail 1 "eth0 up in $h"
    # Persistent UTS namespace: unshare bind-mounts the nsfs file onto WORKDIR/uts/I and runs `hostname`
    # inside it once; later commands join it with nsenter (cheaper and steadier than one unshare per command).
    : >"$work/uts/$i"
    unshare --uts="$work/uts/$i" hostname "$h" 2>"$work/up.err" ||
      nc_up_fail 77 "cannot create a UTS namespace (unshare --uts): $(head -c 200 "$work/up.err")"
    echo "$(nc_addr "$i") $h" >>"$work/hosts"
  done
  # A mount namespace per command (for the /etc/hosts bind) must be possible too.
  NETNS_CLUSTER_WORKDIR=$work "$self" run 0 true 2>"$work/up.err" ||
    nc_up_fail 77 "cannot run on a host (unshare --mount / nsenter): $(head -c 300 "$work/up.err")"
  # Wait (10 s at most) until every eth0 has carrier: the veth+bridge path is then usable.
  local ok=0
  for _ in $(seq 100); do
    ok=1
    for i in $(seq 0 $((n - 1))); do
      ip -n "$prefix$i" link show eth0 | grep -q LOWER_UP || { ok=0; break; }
    done
    [ "$ok" = 1 ] && break
    sleep 0.1
  done
  [ "$ok" = 1 ] || nc_up_fail 1 "eth0 never came up in every host"
  rm -f "$work/up.err"
  trap - INT TERM
  echo "export NETNS_CLUSTER_WORKDIR=$work"
}

# ---- run ------------------------------------------------------------------------------------------------------
# nc_run I CMD...: CMD in host I's network and UTS namespaces, in a fresh private mount namespace where the
# cluster's hosts file is bind-mounted over /etc/hosts (what `ip netns exec` does with /etc/netns/NAME/hosts,
# without writing under /etc). The environment is kept (unlike ssh), plus NETNS_CLUSTER_WORKDIR and, when Slurm
# is up, SLURM_CONF.
nc_run() {
  local i=$1; shift
  [ $# -ge 1 ] || nc_die "run: no command"
  nc_load
  [[ $i =~ ^[0-9]+$ ]] && [ "$i" -lt "$NC_N" ] || nc_die "run: host index '$i' not in 0..$((NC_N - 1))"
  export NETNS_CLUSTER_WORKDIR=$NC_WORK
  [ -f "$NC_WORK/slurm/slurm.conf" ] && export SLURM_CONF=$NC_WORK/slurm/slurm.conf
  # shellcheck disable=SC2016 # $1/$@ belong to the inner sh
  # unshare --mount defaults to private propagation: the bind stays inside this command's mount namespace.
  exec nsenter --net="/run/netns/$NC_PREFIX$i" --uts="$NC_WORK/uts/$i" -- \
    unshare --mount -- /bin/sh -c 'mount --bind "$1" /etc/hosts || exit 125; shift; exec "$@"' \
    nc-run "$NC_WORK/hosts" "$@"
}

nc_pids() {
  nc_load
  ip netns pids "$NC_PREFIX$1" 2>/dev/null
}

# The mpirun flags for this cluster (see README.md for why each).
nc_mpirun_flags() {
  local net16
  nc_load
  net16=$(echo "$NC_NET" | cut -d. -f1-2).0.0/16
  printf '%s\n' --mca plm_rsh_agent "$here/ompi_agent.sh" --mca plm_rsh_no_tree_spawn 1 \
    --mca oob_tcp_if_include "$net16" --mca btl_tcp_if_include "$net16" --mca btl self,vader,tcp \
    --mca hwloc_base_binding_policy none
}

# ---- Slurm ----------------------------------------------------------------------------------------------------
# nc_slurm_up WORKDIR: one munged (on host 0; its socket is a file every namespace sees, so it serves all), a
# slurmctld on host 0 and a slurmd per host, each in its own namespaces with NodeName = its hostname. Ports are
# the standard 6817/6818: every daemon listens in its own network namespace, so nothing can clash.
nc_slurm_up() {
  nc_load "$1"
  local w=$NC_WORK s=$NC_WORK/slurm i nodes
  for tool in munged slurmctld slurmd sinfo; do command -v "$tool" >/dev/null || nc_skip "missing tool: $tool"; done
  mkdir -p "$s/munge" "$s/state" "$s/spool" "$s/tmp"
  dd if=/dev/urandom of="$s/munge/key" bs=1024 count=1 2>/dev/null && chmod 600 "$s/munge/key"
  NETNS_CLUSTER_WORKDIR=$w "$self" run 0 munged --force --socket="$s/munge/socket" --key-file="$s/munge/key" \
    --pid-file="$s/munge/pid" --log-file="$s/munge/log" --seed-file="$s/munge/seed" ||
    nc_die "munged does not start (see $s/munge/log)"
  nodes="${NC_PREFIX}[0-$((NC_N - 1))]"
  [ "$NC_N" = 1 ] && nodes=${NC_PREFIX}0
  {
    cat <<CONF
ClusterName=netnscluster
SlurmctldHost=${NC_PREFIX}0($(nc_addr 0))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$s/munge/socket
CredType=cred/munge
SlurmctldPort=6817
SlurmdPort=6818
StateSaveLocation=$s/state
SlurmdSpoolDir=$s/spool/%n
SlurmctldPidFile=$s/slurmctld.pid
SlurmdPidFile=$s/slurmd-%n.pid
SlurmctldLogFile=$s/slurmctld.log
SlurmdLogFile=$s/slurmd-%n.log
TmpFS=$s/tmp/%n
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=pmix
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=5
MinJobAge=300
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
CONF
    for i in $(seq 0 $((NC_N - 1))); do
      echo "NodeName=$NC_PREFIX$i NodeAddr=$(nc_addr "$i") CPUs=4 RealMemory=2000 State=UNKNOWN"
    done
    echo "PartitionName=cluster Nodes=$nodes Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES"
  } >"$s/slurm.conf"
  export SLURM_CONF=$s/slurm.conf
  NETNS_CLUSTER_WORKDIR=$w "$self" run 0 slurmctld -f "$SLURM_CONF" || nc_die "slurmctld does not start (see $s/slurmctld.log)"
  for i in $(seq 0 $((NC_N - 1))); do
    mkdir -p "$s/spool/$NC_PREFIX$i" "$s/tmp/$NC_PREFIX$i"
    NETNS_CLUSTER_WORKDIR=$w "$self" run "$i" slurmd -f "$SLURM_CONF" -N "$NC_PREFIX$i" ||
      nc_die "slurmd on $NC_PREFIX$i does not start (see $s/slurmd-$NC_PREFIX$i.log)"
  done
  # Every node idle within 30 s.
  local idle=0
  for _ in $(seq 60); do
    idle=$(NETNS_CLUSTER_WORKDIR=$w "$self" run 0 sinfo -h -N -o '%N %t' 2>/dev/null | grep -c ' idle$')
    [ "$idle" = "$NC_N" ] && break
    sleep 0.5
  done
  [ "$idle" = "$NC_N" ] ||
    nc_die "only $idle of $NC_N nodes became idle: $(NETNS_CLUSTER_WORKDIR=$w "$self" run 0 sinfo -N -o '%N %t %E' 2>&1 | tr '\n' ';')"
  echo "netns_cluster: slurm up: $NC_N nodes idle, SLURM_CONF=$SLURM_CONF"
}

# ---- down -----------------------------------------------------------------------------------------------------
# nc_down WORKDIR: TERM then (after 5 s) KILL every process in every host namespace, unmount the UTS files,
# delete the namespaces. Safe to call twice and on a half-built cluster.
nc_down() {
  local w=$1 i pids
  [ -f "$w/cluster.env" ] || return 0
  nc_load "$w"
  for sig in TERM KILL; do
    for i in $(seq 0 $((NC_N - 1))); do
      pids=$(ip netns pids "$NC_PREFIX$i" 2>/dev/null | tr '\n' ' ')
      # shellcheck disable=SC2086
      [ -n "$pids" ] && kill -s "$sig" $pids 2>/dev/null
    done
    [ "$sig" = KILL ] && break
    for _ in $(seq 50); do
      pids=
      for i in $(seq 0 $((NC_N - 1))); do pids+=$(ip netns pids "$NC_PREFIX$i" 2>/dev/null); done
      [ -z "$pids" ] && break
      sleep 0.1
    done
  done
  sleep 0.2
  for i in $(seq 0 $((NC_N - 1))); do
    [ -e "$w/uts/$i" ] && { umount "$w/uts/$i" 2>/dev/null; rm -f "$w/uts/$i"; }
    [ -e "/run/netns/$NC_PREFIX$i" ] && ip netns del "$NC_PREFIX$i" 2>/dev/null
  done
  [ -e "/run/netns/${NC_PREFIX}sw" ] && ip netns del "${NC_PREFIX}sw" 2>/dev/null
  # Open MPI's files of killed jobs (names carry the host names, which are this cluster's alone): the vader
  # segments in /dev/shm and the session directories in /tmp are shared by all namespaces.
  rm -rf /dev/shm/vader_segment."$NC_PREFIX"[0-9]*.* /tmp/ompi."$NC_PREFIX"[0-9]*.* 2>/dev/null
  rm -f "$w/cluster.env"
  return 0
}

# ---- CLI ------------------------------------------------------------------------------------------------------
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
  cmd=${1:-}; shift || true
  case $cmd in
    up) [ $# = 3 ] || nc_die "usage: $0 up N PREFIX WORKDIR"; nc_up "$@" ;;
    run) [ $# -ge 2 ] || nc_die "usage: $0 run I CMD..."; nc_run "$@" ;;
    pids) [ $# = 1 ] || nc_die "usage: $0 pids I"; nc_pids "$@" ;;
    slurm_up) [ $# = 1 ] || nc_die "usage: $0 slurm_up WORKDIR"; nc_slurm_up "$@" ;;
    mpirun_flags) nc_mpirun_flags ;;
    down) [ $# = 1 ] || nc_die "usage: $0 down WORKDIR"; nc_down "$@" ;;
    *) sed -n '3,/^set -uo/p' "$self" | sed '$d'; exit 2 ;;
  esac
fi
