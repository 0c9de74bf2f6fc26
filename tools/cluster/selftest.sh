#!/usr/bin/env bash
# Self-test of the namespace cluster (tools/cluster/netns_cluster.sh):
#   tools/cluster/selftest.sh [WORKDIR]
# 2 hosts x 4 ranks of mpi_probe.c:
#   a. mpirun (on host 0, ompi_agent.sh to reach host 1) --map-by node: rank r on host r%2; --map-by slot: ranks
#      0-3 on host 0; MPI_COMM_TYPE_SHARED of size 4 on each host; Allreduce; a 64 MB Sendrecv host 0 <-> 1;
#   b. host 1's ranks killed (SIGKILL) while every rank loops on MPI_Barrier: every rank everywhere gone and
#      mpirun exited non-zero within 30 s;
#   c. Slurm (slurmctld on host 0, a slurmd per host): srun --mpi=pmix -N2 --ntasks-per-node=4 with
#      --distribution=block and cyclic, and an sbatch job running mpirun (--map-by slot and node) in its
#      allocation: the same checks.
# Exit 0 when all pass, 1 on a failure (with the daemons' logs), 77 with one line when this machine cannot
# run it (not root, no network/UTS namespaces, no Open MPI or Slurm).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/script_lib.sh"
nc=$here/netns_cluster.sh
# WORKDIR (kept, with every output and log); without one a temporary directory, removed when all pass.
auto_work=0
[ $# -ge 1 ] || auto_work=1
work=${1:-$(mktemp -d /tmp/netns-cluster.XXXXXX)}
mkdir -p "$work" && work=$(cd "$work" && pwd)
# A prefix of our own, so that two runs (or a leftover) cannot collide: hosts e.g. ct4711n0, ct4711n1.
prefix=ct$(printf %04d $((RANDOM % 10000)))n
h0=${prefix}0 h1=${prefix}1
start=$(date +%s)
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
say() { echo "cluster selftest: $*"; }
skip() { echo "cluster selftest: NOT RUN: $*" >&2; exit 77; }

bg_pid=''
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  [ -n "$bg_pid" ] && kill "$bg_pid" 2>/dev/null
  [ -n "$fg_pid" ] && kill "$fg_pid" 2>/dev/null
  "$nc" down "$work" >/dev/null 2>&1
}
cluster_traps cleanup
fail() {
  echo "cluster selftest: FAIL: $*" >&2
  for f in "$work"/*.out "$work"/slurm/*.log "$work"/slurm/munge/log; do
    [ -f "$f" ] && { echo "---- $f (last 25 lines)"; tail -n 25 "$f"; }
  done >&2
  exit 1
}

[ "$(id -u)" = 0 ] || skip "needs root (network namespaces, slurmd); this is $(id -un)"
for tool in mpicc mpirun timeout; do command -v "$tool" >/dev/null || skip "missing tool: $tool"; done

# ---- the cluster ----------------------------------------------------------------------------------------------
"$nc" up 2 "$prefix" "$work" >/dev/null
rc=$?
[ "$rc" = 77 ] && exit 77   # netns_cluster printed the one line saying what is missing
[ "$rc" = 0 ] || fail "netns_cluster.sh up failed ($rc)"
export NETNS_CLUSTER_WORKDIR=$work
mpicc -O2 -o "$work/mpi_probe" "$here/mpi_probe.c" 2>"$work/mpicc.out" || fail "mpicc failed"
[ "$(timeout 10 "$nc" run 1 hostname)" = "$h1" ] || fail "hostname on host 1 is not $h1"
[ "$(hostname)" != "$h1" ] || fail "the root's hostname changed"
say "2 hosts up: $(tr '\n' ' ' <"$work/hosts" | sed 's/.*ip6-loopback //')"

# check OUT ORDER: 8 rank lines; ORDER block: rank r on host r/4, cyclic: on host r%2; shared size 4 per host;
# Allreduce and Sendrecv ok; no rank bound to a subset of the CPUs (README.md, "Binding").
# The CPUs this script may use (nproc without the OMP_NUM_THREADS=1 exported above, which nproc honours).
ncpus=$(env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc)
check() {
  local out=$1 order=$2 r want got
  [ "$(grep -c '^rank=' "$out")" = 8 ] || fail "$out: expected 8 rank lines"
  for r in $(seq 0 7); do
    if [ "$order" = block ]; then want=$prefix$((r / 4)); else want=$prefix$((r % 2)); fi
    got=$(sed -n "s/^rank=$r host=\([^ ]*\) .*/\1/p" "$out")
    [ "$got" = "$want" ] || fail "$out: rank $r on '$got', expected $want ($order)"
  done
  [ "$(grep -c '^rank=.* shared_size=4 ' "$out")" = 8 ] || fail "$out: MPI_COMM_TYPE_SHARED is not 4 per host"
  [ "$(sed -n 's/^rank=[0-9]* host=\([^ ]*\) .*/\1/p' "$out" | sort -u | wc -l)" = 2 ] || fail "$out: not 2 hosts"
  [ "$(grep -c "^rank=.* cpus=$ncpus\$" "$out")" = 8 ] ||
    fail "$out: ranks bound to fewer than the $ncpus CPUs: $(grep -o '^rank=[0-9]*\|cpus=[0-9-]*' "$out" | paste -sd' ')"
  grep -q '^allreduce ok' "$out" || fail "$out: Allreduce"
  grep -q "^sendrecv ok bytes=67108864 ranks 0($h0)<->[0-9]*($h1)" "$out" || fail "$out: 64 MB Sendrecv"
  say "ok: $(basename "$out" .out): $order order, shared size 4 per host, $(grep '^sendrecv' "$out" | sed 's/ bytes=67108864//')"
}

# ---- a. mpirun across the hosts -------------------------------------------------------------------------------
mapfile -t flags < <("$nc" mpirun_flags)
for map in node slot; do
  # btl_base_verbose prints which BTL each pair uses ("mca: bml: Using vader btl for send to [[j,1],r] on node H").
  to 120 "$nc" run 0 mpirun --oversubscribe "${flags[@]}" --mca btl_base_verbose 30 -H "$h0:4,$h1:4" \
    --map-by "$map" "$work/mpi_probe" >"$work/mpirun-$map.out" 2>&1 || fail "mpirun --map-by $map failed"
  if [ "$map" = node ]; then check "$work/mpirun-$map.out" cyclic; else check "$work/mpirun-$map.out" block; fi
  out=$work/mpirun-$map.out
  for h in "$h0" "$h1"; do
    grep -q "^\[$h:[0-9]*\] mca: bml: Using vader btl for send to .* on node $h\$" "$out" ||
      fail "$out: ranks on $h do not use vader (shared memory) between them"
    ! grep -q "^\[$h:[0-9]*\] mca: bml: Using tcp btl for send to .* on node $h\$" "$out" ||
      fail "$out: ranks on $h use tcp between them"
  done
  grep -q "^\[$h0:[0-9]*\] mca: bml: Using tcp btl for send to .* on node $h1\$" "$out" ||
    fail "$out: no tcp from $h0 to $h1"
done
say "ok: vader between ranks of one host, tcp between hosts (btl_base_verbose)"

# ---- b. one host's ranks killed mid-run -----------------------------------------------------------------------
# probe_pids I: the mpi_probe processes in host I's network namespace.
probe_pids() {
  local p
  for p in $("$nc" pids "$1"); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = mpi_probe ] && echo "$p"; done
}
timeout 120 "$nc" run 0 mpirun --oversubscribe "${flags[@]}" -H "$h0:4,$h1:4" --map-by node \
  "$work/mpi_probe" hang >"$work/mpirun-kill.out" 2>&1 &
bg_pid=$!
for _ in $(seq 300); do grep -q '^READY' "$work/mpirun-kill.out" && break; sleep 0.1; done
grep -q '^READY' "$work/mpirun-kill.out" || fail "the hanging job never got READY"
victims=$(probe_pids 1 | tr '\n' ' ')
[ "$(echo "$victims" | wc -w)" = 4 ] || fail "expected 4 ranks on host 1, found: '$victims'"
t0=$(date +%s.%N)
# shellcheck disable=SC2086
kill -9 $victims
left=x
for _ in $(seq 300); do
  left="$(probe_pids 0)$(probe_pids 1)"
  [ -z "$left" ] && ! kill -0 "$bg_pid" 2>/dev/null && break
  sleep 0.1
done
[ -z "$left" ] || fail "30 s after killing host 1's ranks, ranks still alive: $(echo "$left" | tr '\n' ' ')"
kill -0 "$bg_pid" 2>/dev/null && fail "30 s after killing host 1's ranks, mpirun still runs"
wait "$bg_pid"
rc=$?
bg_pid=
[ "$rc" != 0 ] || fail "mpirun exited 0 after its ranks on host 1 were killed"
[ "$rc" != 124 ] || fail "mpirun hung until the 120 s timeout"
# Nothing else may be left on the hosts either (orted, sh wrappers): the hosts hold no daemon yet.
left=
for _ in $(seq 50); do
  left="$("$nc" pids 0)$("$nc" pids 1)"
  [ -z "$left" ] && break
  sleep 0.1
done
[ -z "$left" ] || fail "processes left on the hosts: $(for p in $left; do cat "/proc/$p/comm"; done 2>/dev/null | tr '\n' ' ')"
say "ok: host 1's 4 ranks killed: all 8 ranks gone and mpirun exit $rc after $(echo "$(date +%s.%N) - $t0" | bc 2>/dev/null || echo '?') s"

# ---- c. Slurm across the hosts --------------------------------------------------------------------------------
for tool in slurmctld slurmd munged srun sbatch; do command -v "$tool" >/dev/null || skip "missing tool: $tool"; done
to 90 "$nc" slurm_up "$work" >"$work/slurm_up.out" 2>&1 || fail "slurm_up: $(tail -n 1 "$work/slurm_up.out")"
say "$(tail -n 1 "$work/slurm_up.out" | sed 's/^netns_cluster: //')"
timeout 10 "$nc" run 0 srun --mpi=list 2>&1 | grep -q pmix || fail "srun has no pmix ($("$nc" run 0 srun --mpi=list 2>&1 | tr '\n' ' '))"
# The MCA filters, for mpirun inside the allocation too (srun passes the environment on). No binding: see
# README.md ("Binding"); and PMIx's hash store, as tests/e2e/cluster/cluster_cases.sh says why.
export OMPI_MCA_oob_tcp_if_include=10.213.0.0/16 OMPI_MCA_btl_tcp_if_include=10.213.0.0/16 OMPI_MCA_btl=self,vader,tcp
export OMPI_MCA_hwloc_base_binding_policy=none PMIX_MCA_gds=hash
for dist in block cyclic; do
  to 120 "$nc" run 0 srun -N2 --ntasks-per-node=4 --mpi=pmix --distribution="$dist" --time=2 \
    "$work/mpi_probe" >"$work/srun-$dist.out" 2>&1 || fail "srun --distribution=$dist failed"
  check "$work/srun-$dist.out" "$dist"
done

cat >"$work/job.sbatch" <<EOF
#!/bin/bash
# mpirun inside the allocation: Open MPI sees Slurm (ras/plm slurm) and starts its orted on the other node by srun.
set -e
mpirun --oversubscribe --map-by slot "$work/mpi_probe" >"$work/sbatch-slot.out" 2>&1
mpirun --oversubscribe --map-by node "$work/mpi_probe" >"$work/sbatch-node.out" 2>&1
EOF
id=$(timeout 20 "$nc" run 0 sbatch --parsable -N2 --ntasks-per-node=4 --time=3 --chdir="$work" \
  --output="$work/sbatch-job.out" "$work/job.sbatch") || fail "sbatch refused the job"
state=
for _ in $(seq 240); do
  state=$(timeout 10 "$nc" run 0 scontrol show job "$id" 2>/dev/null | tr ' ' '\n' | sed -n 's/^JobState=//p')
  case $state in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY) break ;; esac
  sleep 0.5
done
[ "$state" = COMPLETED ] || fail "sbatch job $id: state '$state'"
check "$work/sbatch-slot.out" block
check "$work/sbatch-node.out" cyclic

say "PASS in $(($(date +%s) - start)) s"
cleanup
trap - EXIT
[ "$auto_work" = 1 ] && rm -rf "$work"
exit 0
