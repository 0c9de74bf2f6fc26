#!/usr/bin/env bash
# shellcheck disable=SC2015 # "A && pass || flunk": pass always succeeds
# omni-generate across "hosts": Linux network + UTS namespaces on this one machine (tools/cluster/netns_cluster.sh),
# Open MPI's mpirun reaching the other host through ompi_agent.sh, and Slurm (a slurmd per host).
#   cluster_cases.sh GENERATE COMPARE MODEL_DIR WORK_DIR MAKE_CHECKPOINT
# Cases (CLUSTER_CASES="ref map8 auto map16 strict kill slurm" chooses some; "ref" is needed by "map8"):
#   ref     one rank, no cluster: the reference tensors (--save-tensors)
#   map8    2 hosts x 4 ranks, mpirun --map-by node and --map-by slot, HSDP shard 4 x cfg 2 x ulysses 2: the
#           report's shard, ulysses and cfg groups on 1 node each, no shard byte sent between hosts, frames and
#           latents equal to the one-rank run (1e-5); "table:" lines with rank 0's bytes of the last step
#   auto    2 hosts x 2 ranks --map-by node, --layout auto on a 4-head model without guidance (dry run): Ulysses 2
#           inside each host and ring 2 across, where one node of 4 would take Ulysses 4
#   map16   2 hosts x 8 ranks --map-by node, HSDP shard 8 x replicate 2 x cfg 2 x ulysses 2, 1 step: no shard
#           byte sent between hosts on any rank
#   strict  2 hosts x 3 ranks, HSDP shard 2 (does not divide 3): one warning and a run that succeeds; with
#           --strict-topology exit 2, one error line, nothing written
#   kill    2 hosts x 4 ranks, 2 prompts (one per host), a rank of host 1 SIGKILLs itself after step 1
#           (OMNI_FAULT_INJECT): every rank on every host gone within 30 s, mpirun non-zero, nothing left in the
#           output folder
#   slurm   tools/slurm/generate.sbatch on --nodes=2 --ntasks-per-node=4 by srun (cyclic) and by mpirun (block),
#           3 prompts each; then a 2-prompt job (block) and a 4-prompt job (cyclic) on one output folder: the
#           second skips the 2 written videos and writes 2
# HSDP needs replicate x shard = the world size (--hsdp-replicate-size defaults to 1), so every layout here names
# its replicate size.
# Exit 0 when every check passes, 1 otherwise, 77 (with netns_cluster's line) when namespaces cannot be made.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
source "$SOURCE_DIR/tools/cluster/script_lib.sh"
gen=$1; cmp=$2; model=$3; work=$4; mk=${5:-}
cases=${CLUSTER_CASES:-ref map8 auto map16 strict kill slurm}
[ -n "$mk" ] && mk=$(readlink -f "$mk")
nc=$SOURCE_DIR/tools/cluster/netns_cluster.sh
sbatch_script=$SOURCE_DIR/tools/slurm/generate.sbatch
gen=$(readlink -f "$gen"); cmp=$(readlink -f "$cmp"); model=$(readlink -f "$model")
# A cluster left by a run killed with SIGKILL (its namespaces hold bind mounts under WORK_DIR): take it down first.
[ -f "$work/cluster/cluster.env" ] && "$nc" down "$work/cluster" >/dev/null 2>&1
rm -rf "$work"; mkdir -p "$work"; work=$(cd "$work" && pwd)
export OMP_NUM_THREADS=1
# The MCA filters for launches inside a Slurm allocation (srun and sbatch pass the environment on).
export OMPI_MCA_oob_tcp_if_include=10.213.0.0/16 OMPI_MCA_btl_tcp_if_include=10.213.0.0/16 OMPI_MCA_btl=self,vader,tcp
# No binding: the hosts share this machine's cores (tools/cluster/README.md, "Binding").
export OMPI_MCA_hwloc_base_binding_policy=none
# PMIx's key-value store in the processes: hash, not the shared-memory dstore (ds21) it picks by default.
# Srun tasks here died, a few times in some 60 jobs, of SIGSEGV at address 0 before printing anything (in
# MPI_Init's PMIx start-up, as far as a one-frame backtrace tells). Debian 12's PMIx 4.2.2 has ds21, whose
# intermittent start-up crashes are known upstream (openpmix#1114, open-mpi/ompi#7335); gds=hash is the
# workaround given there.
export PMIX_MCA_gds=hash
start=$(date +%s)
want() { [[ " $cases " == *" $1 "* ]]; }

# ---- the cluster and its teardown -----------------------------------------------------------------------------
prefix=oc$(printf %04d $((RANDOM % 10000)))h   # hosts e.g. oc4711h0, oc4711h1: no clash with another run
h0=${prefix}0 h1=${prefix}1
cluster=$work/cluster
bg_pid=''
# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
  [ -n "$bg_pid" ] && kill "$bg_pid" 2>/dev/null
  [ -n "$fg_pid" ] && kill "$fg_pid" 2>/dev/null
  [ -f "$cluster/cluster.env" ] && "$nc" down "$cluster" >/dev/null 2>&1
}
cluster_traps cleanup
# judge: lines "ok MESSAGE" / "bad MESSAGE" counted with pass / flunk, other lines echoed (use with < <(...)).
judge() {
  local line
  while IFS= read -r line; do
    case $line in
      "ok "*) pass "${line#ok }" ;;
      "bad "*) flunk "${line#bad }" ;;
      *) echo "$line" ;;
    esac
  done
}
took() { echo "time: $1 $(($(date +%s) - $2)) s"; }
# gen_pids I: omni-generate processes living in host I.
gen_pids() {
  local p
  for p in $("$nc" pids "$1"); do [ "$(cat "/proc/$p/comm" 2>/dev/null)" = omni-generate ] && echo "$p"; done
}

up_err=$("$nc" up 2 "$prefix" "$cluster" 2>&1 >/dev/null)
rc=$?
if [ "$rc" = 77 ]; then echo "$up_err"; exit 77; fi
[ "$rc" = 0 ] || fail "netns_cluster.sh up failed ($rc): $up_err"
export NETNS_CLUSTER_WORKDIR=$cluster
mapfile -t mflags < <("$nc" mpirun_flags)
echo "cluster: hosts $h0 $h1 up in $cluster"

# The fast run (fixture model, 32x48, 5 frames, 2 steps); a case adds its layout and outputs.
base=(--model "$model" --negative-prompt "blurry" --height 32 --width 48 --num-frames 5 --num-inference-steps 2
      --guidance-scale 4 --guidance-scale-2 3 --seed 7 --max-sequence-length 16 --dtype float32 --device cpu)
common=("${base[@]}" --prompt "A red fox runs through the snow")
# mpirun_on HOSTS MAP LOG SECONDS ARGS...: mpirun (on host 0) over HOSTS (e.g. h0:4,h1:4) mapped by MAP, its
# stdout + stderr in LOG; returns mpirun's exit code.
mpirun_on() {
  local hosts=$1 map=$2 log=$3 secs=$4; shift 4
  to "$secs" "$nc" run 0 mpirun --oversubscribe "${mflags[@]}" -H "$hosts" --map-by "$map" -x OMP_NUM_THREADS=1 \
    "$@" >"$log" 2>&1
}

# ---- 1. the one-rank reference ----------------------------------------------------------------------------------
if want ref; then
  t=$(date +%s)
  mkdir -p "$work/ref"
  if to 120 "$gen" "${common[@]}" --output "$work/ref/out.mp4" --save-tensors "$work/ref/out.safetensors" \
    >"$work/ref/log" 2>&1 && [ -f "$work/ref/out.safetensors" ]; then
    pass "ref: one-rank run wrote its tensors"
  else
    flunk "ref: one-rank run failed"; tail -n 20 "$work/ref/log"
  fi
  took ref "$t"
fi

# ---- 2. 2 hosts x 4 ranks, --map-by node and slot ---------------------------------------------------------------
if want map8; then
  layout8=(--use-hsdp --hsdp-shard-size 4 --hsdp-replicate-size 2 --cfg-parallel-size 2 --ulysses-degree 2 --layout manual)
  for map in node slot; do
    t=$(date +%s)
    d=$work/map8-$map
    mkdir -p "$d"
    if [ "$map" = node ]; then
      # The dry run builds the mesh too: its node and group lines.
      mpirun_on "$h0:4,$h1:4" "$map" "$d/dry.log" 60 "$gen" "${common[@]}" "${layout8[@]}" --output "$d/out.mp4" \
        --dry-run
      want_nodes="nodes: 2 nodes: $h0 (ranks 0,2,4,6), $h1 (ranks 1,3,5,7)"
      if grep -qxF "$want_nodes" "$d/dry.log" && grep -qxF '  shard: [0,2,4,6] [1,3,5,7]  (each on 1 node)' "$d/dry.log" &&
        grep -qxF 'groups (world ranks):' "$d/dry.log"; then
        pass "map8 node: dry run lists the nodes and the shard groups on 1 node each"
      else
        flunk "map8 node: dry run's node/group lines"; grep -A9 '^nodes:' "$d/dry.log" || tail -n 20 "$d/dry.log"
      fi
      grep -A8 '^groups (world ranks):' "$d/dry.log" | sed 's/^/dry-run: /'
    fi
    if mpirun_on "$h0:4,$h1:4" "$map" "$d/log" 240 "$gen" "${common[@]}" "${layout8[@]}" --output "$d/out.mp4" \
      --save-tensors "$d/out.safetensors" --report "$d/report.json"; then
      pass "map8 $map: 8 ranks on 2 hosts ran (exit 0)"
    else
      flunk "map8 $map: mpirun exit $?"; tail -n 30 "$d/log"
    fi
    [ -f "$d/out.mp4" ] && ffprobe -v error "$d/out.mp4" && pass "map8 $map: the video is readable" ||
      flunk "map8 $map: no readable $d/out.mp4"
    if [ -f "$d/report.json" ]; then
      judge < <(python3 - "$d/report.json" "$map" "$h0" "$h1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); m, h0, h1 = sys.argv[2], sys.argv[3], sys.argv[4]
t = r["topology"]
want_nodes = ([{"host": h0, "ranks": [0, 2, 4, 6]}, {"host": h1, "ranks": [1, 3, 5, 7]}] if m == "node" else
              [{"host": h0, "ranks": [0, 1, 2, 3]}, {"host": h1, "ranks": [4, 5, 6, 7]}])
print(("ok" if t["nodes"] == want_nodes else "bad") + f" map8 {m}: report nodes {json.dumps(t['nodes'])}")
for kind in ("shard", "ulysses", "cfg"):
    g = t["groups"][kind]
    print(("ok" if g["max_nodes_spanned"] == 1 else "bad") +
          f" map8 {m}: {kind} groups {json.dumps(g['groups'])} max_nodes_spanned {g['max_nodes_spanned']}")
print(f"table: {m} shard-groups {json.dumps(t['groups']['shard']['groups'])}")
bad = [i for i, x in enumerate(r["ranks"])
       if x["traffic"].get("shard", {}).get("sent_inter_node_bytes", -1) != 0
       or x["traffic"].get("shard", {}).get("sent_intra_node_bytes", 0) <= 0]
print(("ok" if not bad and len(r["ranks"]) == 8 else "bad") +
      f" map8 {m}: every rank's shard traffic intra > 0 and inter == 0 (ranks off: {bad})")
# Ulysses and cfg groups are inside a node too: none of their bytes may cross.
cross = sorted({k for x in r["ranks"] for k in ("ulysses", "cfg")
                if x["traffic"].get(k, {}).get("sent_inter_node_bytes", 0) != 0})
print(("ok" if not cross else "bad") + f" map8 {m}: no ulysses/cfg byte sent between hosts (crossing: {cross})")
for kind, c in r["ranks"][0]["traffic"].items():
    print(f"table: {m} {kind} {c['step_sent_intra_node_bytes']} {c['step_sent_inter_node_bytes']}")
for kind, c in r["ranks"][0]["traffic"].items():
    print(f"total: {m} rank0 {kind} collectives {c['collectives']} intra {c['sent_intra_node_bytes']} "
          f"inter {c['sent_inter_node_bytes']}")
PY
      )
    else
      flunk "map8 $map: no report"
    fi
    if [ -f "$work/ref/out.safetensors" ] && [ -f "$d/out.safetensors" ] &&
      "$cmp" "$work/ref/out.safetensors" "$d/out.safetensors" --keys latents,frames --tolerance 1e-5 >"$d/cmp.log" 2>&1; then
      pass "map8 $map: frames and latents equal the one-rank run (1e-5)"
    else
      flunk "map8 $map: frames/latents differ from the one-rank run (or missing)"; tail -n 10 "$d/cmp.log" 2>/dev/null
    fi
    took "map8-$map" "$t"
  done
fi

# ---- 2b. --layout auto on 2 hosts x 2 ranks ----------------------------------------------------------------------
# A 4-head model without guidance: one node alone would take Ulysses 4; across 2 hosts of 2 ranks Ulysses stays
# inside a host (2) and the ring crosses (2). The dry run names the choice and the groups' nodes.
if want auto; then
  t=$(date +%s)
  d=$work/auto
  mkdir -p "$d"
  "$mk" --kind t2v-a14b --preset tiny-heads4 --layers 2 --output "$d/model" >"$d/make.log" 2>&1 ||
    flunk "auto: omni-make-checkpoint failed"
  mpirun_on "$h0:2,$h1:2" node "$d/dry.log" 60 "$gen" --model "$d/model" --prompt "A red fox runs through the snow" \
    --height 32 --width 48 --num-frames 5 --num-inference-steps 2 --guidance-scale 1 --guidance-scale-2 1 \
    --max-sequence-length 16 --device cpu --output "$d/out.mp4" --dry-run
  want_line='layout auto: 1 video on 4 ranks: ulysses 2 x ring 2; 4 heads, no guidance; Ulysses inside a node of 2 ranks'
  if grep -qF "$want_line" "$d/dry.log" && grep -qxF '  ulysses: [0,2] [1,3]  (each on 1 node)' "$d/dry.log"; then
    pass "auto: Ulysses 2 inside each host, ring 2 across (4 heads, 2 hosts of 2)"
  else
    flunk "auto: the layout line or the Ulysses groups"; grep -E 'layout|ulysses|ring' "$d/dry.log" || tail -n 20 "$d/dry.log"
  fi
  took auto "$t"
fi

# ---- 3. 2 hosts x 8 ranks ---------------------------------------------------------------------------------------
if want map16; then
  t=$(date +%s)
  d=$work/map16
  mkdir -p "$d"
  heads=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["num_attention_heads"])' \
    "$model/transformer/config.json")
  [ $((heads % 2)) = 0 ] || fail "the fixture has $heads attention heads: Ulysses degree 2 does not divide them"
  if mpirun_on "$h0:8,$h1:8" node "$d/log" 300 "$gen" "${common[@]}" --num-inference-steps 1 --use-hsdp \
    --hsdp-shard-size 8 --hsdp-replicate-size 2 --cfg-parallel-size 2 --ulysses-degree 2 --layout manual \
    --output "$d/out.mp4" --report "$d/report.json"; then
    pass "map16: 16 ranks on 2 hosts ran (exit 0)"
  else
    flunk "map16: mpirun exit $?"; tail -n 30 "$d/log"
  fi
  if [ -f "$d/report.json" ]; then
    judge < <(python3 - "$d/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
t = r["topology"]
print(f"map16: nodes {json.dumps(t['nodes'])}")
for kind in ("shard", "ulysses", "cfg"):
    g = t["groups"][kind]
    print(("ok" if g["max_nodes_spanned"] == 1 else "bad") +
          f" map16: {kind} groups {json.dumps(g['groups'])} max_nodes_spanned {g['max_nodes_spanned']}")
bad = [i for i, x in enumerate(r["ranks"])
       if x["traffic"].get("shard", {}).get("sent_inter_node_bytes", -1) != 0
       or x["traffic"].get("shard", {}).get("sent_intra_node_bytes", 0) <= 0]
print(("ok" if not bad and len(r["ranks"]) == 16 else "bad") +
      f" map16: every rank's shard traffic intra > 0 and inter == 0 (ranks off: {bad})")
for kind, c in r["ranks"][0]["traffic"].items():
    print(f"table: map16-node {kind} {c['step_sent_intra_node_bytes']} {c['step_sent_inter_node_bytes']}")
PY
    )
  else
    flunk "map16: no report"
  fi
  took map16 "$t"
fi

# ---- 4. 2 hosts x 3 ranks: shard 2 cannot stay inside a node ----------------------------------------------------
if want strict; then
  t=$(date +%s)
  d=$work/strict
  mkdir -p "$d"
  hsdp2=(--use-hsdp --hsdp-shard-size 2 --hsdp-replicate-size 3)
  # Without --strict-topology: one warning (rank 0), and the run goes on.
  mpirun_on "$h0:3,$h1:3" node "$d/warn.log" 240 "$gen" "${common[@]}" --num-inference-steps 1 "${hsdp2[@]}" \
    --output "$d/warn.mp4" --report "$d/warn.json"
  rc=$?
  n=$(grep -c 'ranks are placed across nodes' "$d/warn.log")
  if [ "$rc" = 0 ] && [ "$n" = 1 ] && [ -f "$d/warn.mp4" ] && [ "$(error_lines "$(cat "$d/warn.log")")" = 0 ]; then
    pass "strict: without --strict-topology one warning, exit 0, the video written"
  else
    flunk "strict: without --strict-topology: exit $rc, $n warning lines, video $(ls "$d/warn.mp4" 2>&1)"
    tail -n 20 "$d/warn.log"
  fi
  grep 'ranks are placed across nodes' "$d/warn.log" | sed 's/^/warning: /'
  # With it: exit 2, one error line, nothing written (the mesh is built before the model is loaded).
  mpirun_on "$h0:3,$h1:3" node "$d/strict.log" 60 "$gen" "${common[@]}" "${hsdp2[@]}" --strict-topology \
    --output "$d/strict/out.mp4" --report "$d/strict/report.json"
  rc=$?
  errors=$(error_lines "$(cat "$d/strict.log")")
  if [ "$rc" = 2 ] && [ "$errors" = 1 ] && grep -q '(--strict-topology)' "$d/strict.log" &&
    ! grep -q 'loaded in' "$d/strict.log" && [ -z "$(ls -A "$d/strict" 2>/dev/null)" ]; then
    pass "strict: --strict-topology: mpirun exit 2, one error line, nothing written"
  else
    flunk "strict: --strict-topology: mpirun exit $rc (want 2), $errors error lines, written: $(ls -A "$d/strict" 2>/dev/null | tr '\n' ' ')"
    cat "$d/strict.log"
  fi
  grep '^omni-generate: error' "$d/strict.log" | sed 's/^/error: /'
  took strict "$t"
fi

# ---- 5. one host's rank killed mid-run --------------------------------------------------------------------------
if want kill; then
  t=$(date +%s)
  d=$work/kill
  mkdir -p "$d/out"
  # 2 prompts over the 2 data-parallel groups, one per host (their shard groups are the hosts, so the groups
  # share no collective while they denoise): host 0 makes video-0000, host 1 video-0001. World rank 1 is on
  # host 1 with --map-by node; it SIGKILLs itself after denoising step 1 of its first video. 64 steps (about 8 s
  # of host 0's work, where mpirun's abort takes about 2 s to arrive), so that host 0's video is still in progress
  # when the abort reaches it; a pass ends at the abort, so the steps cost nothing.
  printf 'A red fox runs through the snow\nA boat on a calm lake\n' >"$d/prompts.txt"
  timeout 180 "$nc" run 0 mpirun --oversubscribe "${mflags[@]}" -H "$h0:4,$h1:4" --map-by node \
    -x OMP_NUM_THREADS=1 -x OMNI_FAULT_INJECT=1:1:0:kill "$gen" "${base[@]}" --num-inference-steps 64 \
    --prompts-file "$d/prompts.txt" \
    --use-hsdp --hsdp-shard-size 4 --hsdp-replicate-size 2 --cfg-parallel-size 2 --ulysses-degree 2 --layout manual \
    --output "$d/out/video.mp4" --report "$d/out/report.json" >"$d/log" 2>&1 &
  bg_pid=$!
  # Wait (120 s at most) for all 8 ranks, then for host 1 to lose one.
  seen=0 t_kill=
  for _ in $(seq 1200); do
    n1=$(gen_pids 1 | wc -l)
    [ "$n1" = 4 ] && seen=1
    if [ "$seen" = 1 ] && [ "$n1" -lt 4 ]; then t_kill=$(date +%s.%N); break; fi
    kill -0 "$bg_pid" 2>/dev/null || break
    sleep 0.1
  done
  [ -n "$t_kill" ] || t_kill=$(date +%s.%N)
  left=x
  for _ in $(seq 300); do
    left="$(gen_pids 0)$(gen_pids 1)"
    [ -z "$left" ] && ! kill -0 "$bg_pid" 2>/dev/null && break
    sleep 0.1
  done
  gone=$(echo "$(date +%s.%N) - $t_kill" | bc)
  if [ -z "$left" ] && ! kill -0 "$bg_pid" 2>/dev/null; then
    pass "kill: every rank on both hosts gone and mpirun ended $(printf %.1f "$gone") s after host 1 lost a rank"
  else
    flunk "kill: 30 s after the kill: ranks left '$(echo "$left" | tr '\n' ' ')', mpirun $(kill -0 "$bg_pid" 2>/dev/null && echo running || echo ended)"
  fi
  wait "$bg_pid"; rc=$?
  bg_pid=
  # The kill must have happened as planned: 4 ranks seen on host 1, then rank 1 killed by signal 9 mid-video.
  # Counted on a file, not by "tr | grep -q" under pipefail: grep -q leaves at its first match, and tr, still
  # writing a log of more than one pipe write, dies of SIGPIPE and fails the pipeline (CI, stop 55).
  tr '\r' '\n' <"$d/log" >"$d/log.lines"
  killed=$(grep -c 'process rank 1 .* on node '"$h1"' exited on signal 9' "$d/log.lines")
  first=$(grep -c 'generate step 1/64' "$d/log.lines") last=$(grep -c 'generate step 64/64' "$d/log.lines")
  if [ "$seen" = 1 ] && [ "$killed" -ge 1 ] && [ "$first" -ge 1 ] && [ "$last" = 0 ]; then
    pass "kill: rank 1 on $h1 was SIGKILLed mid-video (4 ranks on $h1 seen before)"
  else
    flunk "kill: the kill did not happen as planned (4 ranks on $h1 seen: $seen; rank 1 SIGKILLed: $killed; step 1 logged: $first; step 64 logged: $last)"
    grep -v 'generate step' "$d/log.lines" | tail -n 30
  fi
  if [ "$rc" != 0 ] && [ "$rc" != 124 ]; then pass "kill: mpirun exit $rc"; else flunk "kill: mpirun exit $rc"; tail -n 20 "$d/log"; fi
  grep 'exited on signal 9' "$d/log" | sed 's/^/kill: mpirun: /'
  grep 'stopped by SIGTERM' "$d/log" | sort | uniq -c | sed 's/^ */kill: ranks saying: /'
  stray=$(ls -A "$d/out")
  if [ -z "$stray" ]; then pass "kill: the output folder is empty (no .mp4, no sidecar, no hidden temporary file)"
  else flunk "kill: left in the output folder: $(echo "$stray" | tr '\n' ' ')"; fi
  # Nothing else of the job (orted, agent shells) may be left on the hosts.
  for _ in $(seq 50); do
    left="$("$nc" pids 0)$("$nc" pids 1)"
    [ -z "$left" ] && break
    sleep 0.1
  done
  [ -z "$left" ] && pass "kill: no process left on the hosts" ||
    flunk "kill: processes left on the hosts: $(for p in $left; do cat "/proc/$p/comm"; done 2>/dev/null | tr '\n' ' ')"
  took kill "$t"
fi

# ---- 6. Slurm across the hosts ----------------------------------------------------------------------------------
if want slurm; then
  t=$(date +%s)
  if ! to 90 "$nc" slurm_up "$cluster" >"$work/slurm_up.log" 2>&1; then
    flunk "slurm: slurm_up: $(tail -n 1 "$work/slurm_up.log")"
  else
    s=$work/slurm
    mkdir -p "$s"
    export OMNI_GENERATE=$gen MODEL=$model DEVICE=cpu LAYOUT="--use-hsdp --hsdp-shard-size 4 --hsdp-replicate-size 2"
    EXTRA_FLAGS="--negative-prompt blurry --height 32 --width 48 --num-frames 5 --num-inference-steps 2"
    export EXTRA_FLAGS="$EXTRA_FLAGS --guidance-scale 4 --guidance-scale-2 3 --seed 7 --max-sequence-length 16 --dtype float32"
    printf 'A red fox in the snow\nA boat on a calm lake\nA city at night\n' >"$s/three.txt"
    printf 'one: a red fox\ntwo: a boat\n' >"$s/two.txt"
    printf 'one: a red fox\ntwo: a boat\nthree: a city\nfour: a kite\n' >"$s/four.txt"
    # submit NAME OUT_DIR PROMPTS [sbatch flags...]: the job id.
    submit() {
      local name=$1 out=$2 prompts=$3; shift 3
      OUT_DIR=$out timeout 20 "$nc" run 0 sbatch --parsable --job-name="$name" --nodes=2 --ntasks-per-node=4 \
        --gpus-per-node=0 --cpus-per-task=1 --time=5 --chdir="$s" --output="$s/job-$name-%j.log" "$@" \
        "$sbatch_script" "$prompts"
    }
    field() { timeout 10 "$nc" run 0 scontrol show job "$1" 2>/dev/null | tr ' ' '\n' | sed -n "s/^$2=//p" | head -1; }
    wait_done() {  # wait_done ID SECONDS: the final state
      local state end=$(($(date +%s) + $2))
      while [ "$(date +%s)" -lt "$end" ]; do
        state=$(field "$1" JobState)
        case $state in COMPLETED | FAILED | CANCELLED | TIMEOUT | NODE_FAIL | OUT_OF_MEMORY | BOOT_FAIL | DEADLINE)
          echo "$state"; return ;;
        esac
        sleep 1
      done
      timeout 10 "$nc" run 0 scancel "$1" >/dev/null 2>&1
      echo "STILL_${state:-UNKNOWN}"
    }
    # report_check REPORT NAME DIST GENERATED SKIPPED
    report_check() {
      judge < <(python3 - "$@" "$h0" "$h1" <<'PY'
import json, sys
path, name, dist, gen, skip, h0, h1 = sys.argv[1:8]
try:
    r = json.load(open(path))
except Exception as e:
    print(f"bad slurm {name}: report {path}: {e}"); sys.exit()
t = r["topology"]
want = ([{"host": h0, "ranks": [0, 2, 4, 6]}, {"host": h1, "ranks": [1, 3, 5, 7]}] if dist == "cyclic" else
        [{"host": h0, "ranks": [0, 1, 2, 3]}, {"host": h1, "ranks": [4, 5, 6, 7]}])
print(("ok" if t["nodes"] == want else "bad") + f" slurm {name}: {dist} placement in the report: {json.dumps(t['nodes'])}")
g = t["groups"]["shard"]
print(("ok" if g["max_nodes_spanned"] == 1 else "bad") +
      f" slurm {name}: shard groups {json.dumps(g['groups'])} each on 1 node (max_nodes_spanned {g['max_nodes_spanned']})")
s = r["summary"]
want_s = {"generated": int(gen), "skipped": int(skip), "failed": 0}
print(("ok" if s == want_s else "bad") + f" slurm {name}: summary {json.dumps(s)}")
print(f"slurm {name}: layout {json.dumps(r['layout'])}; videos {json.dumps([v['status'] for v in r['videos']])}")
print(f"slurm {name}: max_nodes_spanned " + " ".join(f"{k} {v['max_nodes_spanned']}" for k, v in t["groups"].items()))
PY
      )
    }
    count_videos() { find "$1" -maxdepth 1 -name '*.mp4' 2>/dev/null | wc -l; }
    # The two launchers, 3 prompts each.
    for launch in srun mpirun; do
      tj=$(date +%s)
      dist=block; [ "$launch" = srun ] && dist=cyclic
      out=$s/out-$launch
      if id=$(LAUNCH=$launch submit "$launch" "$out" "$s/three.txt" --distribution="$dist"); then
        state=$(wait_done "$id" 240)
        code=$(field "$id" ExitCode)
        [ "$state" = COMPLETED ] && [ "$code" = 0:0 ] && pass "slurm $launch: job $id COMPLETED 0:0 ($dist)" ||
          { flunk "slurm $launch: job $id $state, exit code $code"; tail -n 30 "$s/job-$launch-$id.log"; }
        n=$(count_videos "$out")
        [ "$n" = 3 ] && pass "slurm $launch: 3 videos" || flunk "slurm $launch: $n videos in $out"
        report_check "$out/report-$id-0.json" "$launch" "$dist" 3 0
        grep -h 'ranks are placed across nodes' "$s/job-$launch-$id.log" | sed "s/^/slurm $launch warning: /"
      else
        flunk "slurm $launch: sbatch refused the job"
      fi
      took "slurm-$launch" "$tj"
    done
    # A rerun on another distribution: 2 videos written by a block job, the 4-prompt cyclic job makes the rest.
    tj=$(date +%s)
    out=$s/out-rerun before=''
    if id=$(LAUNCH=srun submit rerun1 "$out" "$s/two.txt" --distribution=block); then
      state=$(wait_done "$id" 240)
      n=$(count_videos "$out")
      [ "$state" = COMPLETED ] && [ "$n" = 2 ] && pass "slurm rerun: first job $id (block) COMPLETED, 2 videos" ||
        { flunk "slurm rerun: first job $id $state, $n videos"; tail -n 30 "$s/job-rerun1-$id.log"; }
      report_check "$out/report-$id-0.json" rerun1 block 2 0
      before=$(cd "$out" && stat -c '%n %Y' video-0000.mp4 video-0001.mp4 2>/dev/null)
    else
      flunk "slurm rerun: sbatch refused the first job"
    fi
    if id=$(LAUNCH=srun submit rerun2 "$out" "$s/four.txt" --distribution=cyclic); then
      state=$(wait_done "$id" 240)
      n=$(count_videos "$out")
      [ "$state" = COMPLETED ] && [ "$n" = 4 ] && pass "slurm rerun: second job $id (cyclic) COMPLETED, 4 videos in all" ||
        { flunk "slurm rerun: second job $id $state, $n videos"; tail -n 30 "$s/job-rerun2-$id.log"; }
      report_check "$out/report-$id-0.json" rerun2 cyclic 2 2
      after=$(cd "$out" && stat -c '%n %Y' video-0000.mp4 video-0001.mp4 2>/dev/null)
      [ -n "$before" ] && [ "$before" = "$after" ] && pass "slurm rerun: the 2 written videos were not rewritten" ||
        flunk "slurm rerun: the first 2 videos changed ($before -> $after)"
      grep -h 'summary:' "$s/job-rerun2-$id.log" | sed 's/^/slurm rerun2 log: /'
      stray=$(find "$out" -maxdepth 1 -name '.*' | tr '\n' ' ')
      [ -z "$stray" ] && pass "slurm rerun: no stray hidden file" || flunk "slurm rerun: stray files: $stray"
    else
      flunk "slurm rerun: sbatch refused the second job"
    fi
    took slurm-rerun "$tj"
  fi
  took slurm "$t"
fi

took all "$start"
summary
