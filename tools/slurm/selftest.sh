#!/usr/bin/env bash
# A real Slurm on this machine: one node, its own configuration in WORK_DIR, loopback only.
#   tools/slurm/selftest.sh [WORK_DIR]      (the build in $BUILD_DIR, build/ by default)
# Installs Debian's slurm-wlm and munge when missing (as root), starts munged, slurmctld and slurmd with private
# sockets, ports, state and logs, and runs tools/slurm/generate.sbatch adapted by environment variables to the
# built-in default model on CPU ranks:
#   1. 4 tasks started by srun (PMIx), HSDP shard 4, a 3-line prompts file: the job COMPLETED with exit code
#      0:0, 3 videos that ffprobe reads, and a report saying 3 generated;
#   2. the same started by mpirun inside the allocation;
#   3. a 5-line prompts file preempted after 2 videos (scancel --signal=TERM: SIGTERM to every task; the job
#      ends with exit code 143; then scontrol requeue): it ends COMPLETED after one restart with exactly 5
#      videos and no stray file (the job completion records, jobcomp/filetxt, hold both runs).
# Stops everything it started. Exit 0 when all pass, 1 on a failure (with the daemons' logs), 77 with one line
# saying why when Slurm cannot run here (not root, no apt, a daemon that does not start).
set -uo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${BUILD_DIR:-$root/build}" && pwd)
work=${1:-$(mktemp -d /tmp/omni-slurm.XXXXXX)}
rm -rf "$work"; mkdir -p "$work"; work=$(cd "$work" && pwd)
skip() { echo "slurm selftest: NOT RUN: $*" >&2; exit 77; }

# ---- Slurm and munge ----------------------------------------------------------------------------------------
[ "$(id -u)" = 0 ] || skip "slurmd must run as root to start tasks as the job's user; this is $(id -un)"
if ! command -v slurmctld >/dev/null || ! command -v slurmd >/dev/null || ! command -v munged >/dev/null; then
  command -v apt-get >/dev/null || skip "slurm-wlm and munge are not installed and there is no apt-get"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends slurm-wlm munge \
    >"$work/apt.log" 2>&1 || skip "apt-get install slurm-wlm munge failed (see $work/apt.log)"
fi

started=()
cleanup() {
  for pidfile in "${started[@]}"; do [ -s "$pidfile" ] && kill "$(cat "$pidfile")" 2>/dev/null; done
  sleep 1
}
trap cleanup EXIT
fail() {
  echo "slurm selftest: FAIL: $*" >&2
  for f in "$work"/slurmctld.log "$work"/slurmd.log "$work"/job-*.log; do
    [ -f "$f" ] && { echo "---- $f (last 30 lines)"; tail -n 30 "$f"; }
  done >&2
  exit 1
}

mkdir -p "$work/munge" "$work/state" "$work/spool" "$work/out"
dd if=/dev/urandom of="$work/munge/key" bs=1024 count=1 2>/dev/null && chmod 600 "$work/munge/key"
munged --force --socket="$work/munge/socket" --key-file="$work/munge/key" --pid-file="$work/munge/pid" \
  --log-file="$work/munge/log" --seed-file="$work/munge/seed" || skip "munged does not start (see $work/munge/log)"
started+=("$work/munge/pid")

# Free ports on the loopback.
port=$((20000 + RANDOM % 20000))
while ss -ltn 2>/dev/null | grep -q ":$port \|:$((port + 1)) "; do port=$((port + 2)); done
node=$(hostname -s)
export SLURM_CONF=$work/slurm.conf
cat >"$SLURM_CONF" <<CONF
ClusterName=omniselftest
SlurmctldHost=$node(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$work/munge/socket
CredType=cred/munge
SlurmctldPort=$port
SlurmdPort=$((port + 1))
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
MpiDefault=pmix
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=20
MinJobAge=3600
JobRequeue=1
JobCompType=jobcomp/filetxt
JobCompLoc=$work/jobcomp.txt
AccountingStorageType=accounting_storage/none
NodeName=$node NodeAddr=127.0.0.1 CPUs=4 RealMemory=8000 State=UNKNOWN
PartitionName=selftest Nodes=$node Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
slurmctld -f "$SLURM_CONF" || skip "slurmctld does not start (see $work/slurmctld.log)"
started+=("$work/slurmctld.pid")
slurmd -f "$SLURM_CONF" || skip "slurmd does not start (see $work/slurmd.log)"
started+=("$work/slurmd.pid")
for _ in $(seq 60); do sinfo -h -o %t 2>/dev/null | grep -q idle && break; sleep 0.5; done
sinfo -h -o %t 2>/dev/null | grep -q idle || skip "the node never became idle: $(sinfo -h -o '%t %E' 2>&1)"
echo "slurm selftest: slurmctld and slurmd up on $node (ports $port-$((port + 1))), $(sbatch --version)"

# ---- jobs -----------------------------------------------------------------------------------------------------
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
export PMIX_MCA_gds=hash  # hash, not ds21: see tests/e2e/cluster/cluster_cases.sh (srun tasks' start-up SIGSEGV)
export OMNI_CACHE_DIR=$work/cache OMNI_GENERATE=$build/apps/omni-generate MODEL= DEVICE=cpu
export LAYOUT="--use-hsdp --hsdp-shard-size 4"
# submit NAME OUT_DIR PROMPTS [sbatch flags...]: the job id.
submit() {
  local name=$1 out=$2 prompts=$3; shift 3
  OUT_DIR=$out sbatch --parsable --job-name="$name" --nodes=1 --ntasks-per-node=4 --gpus-per-node=0 \
    --cpus-per-task=1 --time=20 --chdir="$work" --output="$work/job-$name-%j.log" --open-mode=append "$@" \
    "$root/tools/slurm/generate.sbatch" "$prompts"
}
field() { scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }
# wait_done ID: until the job reaches a final state (10 minutes at most); prints it.
wait_done() {
  local state
  for _ in $(seq 1200); do
    state=$(field "$1" JobState)
    case $state in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE)
      echo "$state"; return ;;
    esac
    sleep 0.5
  done
  echo "TIMEOUT_WAITING"
}
check_videos() {  # check_videos OUT_DIR COUNT
  local n
  n=$(find "$1" -maxdepth 1 -name '*.mp4' | wc -l)
  [ "$n" = "$2" ] || fail "$1 holds $n videos, expected $2: $(ls -A "$1" | tr '\n' ' ')"
  for v in "$1"/*.mp4; do ffprobe -v error "$v" || fail "ffprobe cannot read $v"; done
  local stray
  stray=$(find "$1" -maxdepth 1 -name '.*' -type f | tr '\n' ' ')
  [ -z "$stray" ] || fail "stray files in $1: $stray"
}

printf 'A red fox in the snow\nA boat on a calm lake\nA city at night\n' >"$work/three.txt"
for launch in srun mpirun; do
  id=$(LAUNCH=$launch submit "$launch" "$work/out-$launch" "$work/three.txt") || fail "sbatch refused the job"
  state=$(wait_done "$id")
  code=$(field "$id" ExitCode)
  [ "$state" = COMPLETED ] && [ "$code" = 0:0 ] || fail "$launch job $id: $state, exit code $code"
  check_videos "$work/out-$launch" 3
  python3 - "$work/out-$launch"/report-"$id"-0.json <<'PY' || fail "$launch job $id: report"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["world_size"] == 4 and r["layout"]["hsdp_shard"] == 4, r["layout"]
assert r["summary"] == {"generated": 3, "skipped": 0, "failed": 0}, r["summary"]
PY
  echo "slurm selftest: ok: 4 ranks by $launch, job $id COMPLETED 0:0, 3 videos and the report"
done

# Preemption: requeue (SIGTERM to every task, KillWait later SIGKILL) once 2 of 5 videos are written.
printf 'one: a red fox\ntwo: a boat\nthree: a city\nfour: a kite\nfive: a lake\n' >"$work/five.txt"
# 2 data-parallel groups (ulysses 2, one HSDP shard group over the 4 ranks): videos are written 2 per round, so
# the signal lands in the second round, after exactly 2.
id=$(LAYOUT="--ulysses-degree 2 --use-hsdp --hsdp-shard-size 4" EXTRA_FLAGS="--num-inference-steps 24" \
  submit preempt "$work/out-preempt" "$work/five.txt") || fail "sbatch"
for _ in $(seq 1200); do
  [ "$(find "$work/out-preempt" -maxdepth 1 -name '*.mp4' 2>/dev/null | wc -l)" -ge 2 ] && break
  sleep 0.2
done
# Preemption as Slurm does it: SIGTERM to every task (scancel --signal=TERM); the job ends; it is requeued.
scancel --signal=TERM "$id" || fail "scancel --signal=TERM $id"
first=$(wait_done "$id")
first_code=$(field "$id" ExitCode)
echo "slurm selftest: after SIGTERM: job $id $first, exit code $first_code (143 = 128 + SIGTERM)"
[ "$first_code" = 143:0 ] || fail "the signalled job $id ended with exit code $first_code, expected 143:0"
scontrol requeue "$id" || fail "scontrol requeue $id"
# A requeued job waits about 2 minutes before it is eligible again (Slurm's requeue delay); 10 seconds are
# enough here. Not less: slurmd refuses a new launch of a job whose credential it revoked in the same second
# ("Job credential revoked").
for _ in $(seq 100); do [ "$(field "$id" JobState)" = PENDING ] && break; sleep 0.2; done
scontrol update JobId="$id" StartTime=now+10 >/dev/null 2>&1 || true
state=$(wait_done "$id")
code=$(field "$id" ExitCode)
restarts=$(field "$id" Restarts)
[ "$state" = COMPLETED ] && [ "$code" = 0:0 ] && [ "$restarts" = 1 ] ||
  fail "preempted job $id: $state, exit code $code, $restarts restart(s)"
check_videos "$work/out-preempt" 5
grep -q "stopped by SIGTERM" "$work"/job-preempt-"$id".log ||
  fail "the preempted run did not say it was stopped (job-preempt-$id.log)"
python3 - "$work/out-preempt/report-$id-1.json" <<'PY' || fail "preempted job $id: the restart's report"
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
assert s == {"generated": 3, "skipped": 2, "failed": 0}, s
print(f"slurm selftest: the restart skipped {s['skipped']} and generated {s['generated']}")
PY
# The job completion records: the preempted run, then the completed restart.
records=$(grep "JobId=$id " "$work/jobcomp.txt" | sed -E 's/.*(JobState=[A-Z_]+).*(DerivedExitCode=[0-9:]+) (ExitCode=[0-9:]+).*/\1 \2 \3/')
echo "$records" | sed 's/^/slurm selftest: job record: /'
grep -q "ExitCode=143:0" <<<"$records" || fail "no record of the run ended by SIGTERM (143:0) for job $id"
grep -q "JobState=COMPLETED DerivedExitCode=[0-9:]* ExitCode=0:0" <<<"$records" || fail "no COMPLETED record for job $id"
echo "slurm selftest: ok: preempted after 2 videos, requeued, 5 videos, no stray file"
