#!/usr/bin/env bash
# The dry run's traffic estimate against what the run's process groups counted: for each layout, every rank's
# bytes per denoising step per group kind (shard gathers, Ulysses all-to-alls, ring hops, the sequence-parallel
# gather, the CFG exchange) equal in the dry run's report (the memory planner's formulas from the model's shapes)
# and in the run's report (the collectives' own counts over the last step). One host: nothing crosses a node.
#   traffic.sh GENERATE MODEL_DIR WORK_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; model=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
common=(--model "$model" --prompt "A red fox in the snow" --negative-prompt "blurry" --height 32 --width 48
        --num-frames 5 --num-inference-steps 2 --max-sequence-length 16 --dtype float32 --layout manual
        --log-level warn)
check() {  # check NAME FLAGS...
  local name=$1; shift
  mpi -t 300 4 "$gen" "${common[@]}" "$@" --dry-run --report "$work/$name-plan.json" >/dev/null
  mpi -t 300 4 "$gen" "${common[@]}" "$@" --output "$work/$name.mp4" --report "$work/$name-run.json"
  python3 - "$work/$name-plan.json" "$work/$name-run.json" "$name" <<'PY'
import json, sys
plan, run, name = (json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3])
bad = []
kinds = set()
for r, (p, m) in enumerate(zip(plan["ranks"], run["ranks"])):
    est = p["traffic_estimate"]
    got = {k: v for k, v in m["traffic"].items() if k in ("shard", "ulysses", "ring", "sp", "cfg")}
    for k in set(est) | set(got):
        e = est.get(k, {}).get("step_sent_intra_node_bytes", 0)
        g = got.get(k, {}).get("step_sent_intra_node_bytes", 0)
        kinds.add(k)
        if e != g or e == 0:
            bad.append(f"rank {r} {k}: estimate {e}, measured {g}")
        if got.get(k, {}).get("step_sent_inter_node_bytes", 0) or est.get(k, {}).get("step_sent_inter_node_bytes", 0):
            bad.append(f"rank {r} {k}: inter-node bytes on one host")
if bad:
    print(f"FAIL: {name}: " + "; ".join(bad))
    sys.exit(1)
print(f"ok: {name}: estimate = measured per step for {', '.join(sorted(kinds))}")
PY
}
check ulysses2_cfg2_hsdp2 --ulysses-degree 2 --cfg-parallel-size 2 --use-hsdp --hsdp-shard-size 2 --hsdp-replicate-size 2
check ring2_ulysses2_hsdp4 --ring-degree 2 --ulysses-degree 2 --use-hsdp --hsdp-shard-size 4
check ring4 --ring-degree 4
