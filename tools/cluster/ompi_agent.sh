#!/usr/bin/env bash
# Open MPI launch agent for a netns_cluster (instead of ssh):
#   mpirun --mca plm_rsh_agent /path/ompi_agent.sh ...
# Open MPI calls it like ssh: `agent [ssh options] HOST word...`, the words forming one shell command line
# (e.g. `PATH=...; export PATH; ... /usr/bin/orted -mca ess "env" ... -mca orte_hnp_uri "...;tcp://..."`).
# Like sshd, we join the words with spaces and hand them to /bin/sh - but on HOST's namespaces (network, UTS,
# its /etc/hosts) through `netns_cluster.sh run`. HOST is a cluster host name or address, looked up in the
# cluster's hosts file. The cluster is found through $NETNS_CLUSTER_WORKDIR (set by `netns_cluster.sh run`).
set -uo pipefail
here=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")
work=${NETNS_CLUSTER_WORKDIR:?ompi_agent.sh: NETNS_CLUSTER_WORKDIR is not set (run mpirun via netns_cluster.sh run)}
# Skip ssh-style options (Open MPI passes none to a non-ssh agent, but be tolerant: -x, -o opt, -l user...).
while [ $# -gt 0 ]; do
  case $1 in
    -[olipFJ]) shift 2 ;;
    -*) shift ;;
    *) break ;;
  esac
done
[ $# -ge 2 ] || { echo "ompi_agent.sh: usage: ompi_agent.sh [options] HOST COMMAND..." >&2; exit 255; }
host=$1; shift
# shellcheck disable=SC1091
. "$work/cluster.env"
idx=
while read -r addr name _; do
  if [ "$host" = "$addr" ] || [ "$host" = "$name" ] || [ "${host%%.*}" = "$name" ]; then
    case $name in "$NC_PREFIX"[0-9]*) idx=${name#"$NC_PREFIX"} ;; esac
    [ -n "$idx" ] && break
  fi
done <"$work/hosts"
[ -n "$idx" ] || { echo "ompi_agent.sh: unknown host '$host' (not in $work/hosts)" >&2; exit 255; }
exec "$here/netns_cluster.sh" run "$idx" /bin/sh -c "$*"
