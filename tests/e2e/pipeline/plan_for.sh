#!/usr/bin/env bash
# --plan-for GPU[xN] (docs/DESIGN.md section 12): a dry run on this CPU machine plans the job for GPUs it does not
# have. On the T2V-A14B tiny reference model, 4 ranks with HSDP over 4:
#   - the budget is the named GPU's memory as CUDA reports it (dist/gpu_table.cpp), the report names it;
#   - the plan is a GPU's: CUDA attention, no checkpoint pages or host decode overhead (the CPU plan's decode
#     working set less its fixed 384 MiB host part), the same resident weights;
#   - xN places the ranks on nodes of N: the cfg group of cfg 2 x ulysses 2 then crosses nodes in the traffic
#     estimate, and does not without it;
#   - a GPU too small (custom) warns, and with --strict-memory is one usage error; an unknown GPU, a bad custom
#     spec and --plan-for without --dry-run are usage errors;
#   - --calibration FILE (forward_bench.json, as tools/gpu/check.sh writes it; here forward_bench's own on the
#     CPU): the time plan's compute is the step's FLOPs at the a14b row's achieved rate, and its decode the vae21
#     row's seconds per pixel-frame; a file without an a14b row is an input error on every rank, --calibration
#     without --plan-for a usage error.
#   plan_for.sh GENERATE FORWARD_BENCH REFERENCE_DIR WORK_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; bench=$2; ref=$3; work=$4
rm -rf "$work"; mkdir -p "$work"
common=(--model "$ref/t2v-a14b-tiny/model" --height 256 --width 256 --num-frames 17 --prompt "A fox" --log-level warn
        --use-hsdp --hsdp-shard-size 4 --cfg-parallel-size 2 --ulysses-degree 2 --no-vae-parallel --dry-run)
dry() {  # dry NAME FLAGS...: text and report of a 4-rank dry run
  local name=$1; shift
  mpi 4 "$gen" "${common[@]}" "$@" --output "$work/$name.mp4" --report "$work/$name.json" >"$work/$name.out"
}
dry cpu
dry h100 --plan-for h100-80gb
dry nodes --plan-for H100-80GBx2

grep -q "^memory available per rank (rank 0): 79.65 GiB (--plan-for h100-80gb: NVIDIA H100 80GB HBM3 (SXM), 79.65 GiB); the plan fits" \
  "$work/h100.out" && pass "the budget is the H100's" || { grep "memory available" "$work/h100.out"; flunk "budget"; }
grep -q "^memory plan per rank (GPU memory allocated, bfloat16 weights, flash (CUDA) attention" "$work/h100.out" &&
  pass "planned as on a GPU" || { grep "^memory plan" "$work/h100.out"; flunk "not a GPU plan"; }
grep -q "^nodes: 2 nodes: node0 (ranks 0-1), node1 (ranks 2-3)" "$work/nodes.out" && pass "x2: two nodes of two" ||
  { grep "^nodes" "$work/nodes.out"; flunk "x2 nodes"; }
python3 - "$work" <<'PY' && pass "the GPU plan: no host parts, the same weights; x2 moves cfg across nodes" || flunk "plans"
import json, sys
w = sys.argv[1]
cpu, gpu, nodes = (json.load(open(f"{w}/{n}.json")) for n in ("cpu", "h100", "nodes"))
assert gpu["plan_for"]["name"] == "h100-80gb" and gpu["plan_for"]["memory_bytes"] == 81559 * 2**20, gpu["plan_for"]
assert gpu["plan_for"]["gpus_per_node"] == 0 and nodes["plan_for"]["gpus_per_node"] == 2
for c, g in zip(cpu["ranks"], gpu["ranks"]):
    cp, gp = c["planned_phases"], g["planned_phases"]
    assert cp["load"]["parts"]["transformer"] == gp["load"]["parts"]["transformer"]
    assert any(k.startswith("checkpoint pages read") for k in cp["load"]["parts"]), "the CPU plan reads pages"
    assert not any(k.startswith("checkpoint pages read") for k in gp["load"]["parts"]), "the GPU plan maps pages"
    if "decode" in cp:
        host = cp["decode"]["parts"]["vae decode working set"] - gp["decode"]["parts"]["vae decode working set"]
        assert host == 384 * 2**20, f"the decode's host part: {host}"
def cfg_inter(report):
    return max(r["traffic_estimate"]["cfg"]["step_sent_inter_node_bytes"] for r in report["ranks"])
assert cfg_inter(gpu) == 0 and cfg_inter(nodes) > 0, (cfg_inter(gpu), cfg_inter(nodes))
PY

# A GPU of 10 MB: the plan does not fit (a warning; --strict-memory: one usage error on every rank).
mpi 4 "$gen" "${common[@]}" --plan-for custom:0.01,100,1000,100 --output "$work/small.mp4" >"$work/small.out" \
  2>"$work/small.err"
grep -q "the plan does NOT fit" "$work/small.out" && grep -q "memory plan: rank .* more than --plan-for custom: as given, 9.54 MiB" \
  "$work/small.err" && pass "too small a GPU: warned" || { cat "$work/small.out" "$work/small.err"; flunk "small"; }
set +e  # expect checks the exit codes
expect "too small a GPU, --strict-memory" 4 2 "(--strict-memory)" -- "${common[@]}" --plan-for custom:0.01,100,1000,100 \
  --strict-memory --output "$work/strict.mp4"
expect "an unknown GPU" 1 2 "--plan-for: unknown GPU 'h100'; known: h100-80gb, h200, b200, a100-80gb, l40s" -- \
  "${common[@]}" --plan-for h100 --output "$work/x.mp4"
expect "a bad custom GPU" 1 2 "custom takes four numbers" -- "${common[@]}" --plan-for custom:80,989 \
  --output "$work/x.mp4"
expect "--plan-for without --dry-run" 1 2 "plans a job for GPUs this run does not use: add --dry-run" -- \
  --model "$ref/t2v-a14b-tiny/model" --plan-for h200 --output "$work/x.mp4"

"$bench" --device cpu --tiny --only a14b,vae21 --warmup 1 --iters 1 --json "$work/forward_bench.json" >/dev/null 2>&1
set -e
dry calibrated --plan-for h200 --calibration "$work/forward_bench.json"
set +e
python3 - "$work" <<'PY' && pass "calibrated: the step's FLOPs at the measured rate, the measured decode" || flunk "calibration"
import json, sys
w = sys.argv[1]
rows = json.load(open(f"{w}/forward_bench.json"))
fwd = next(r for r in rows if r["workload"] == "a14b" and r["weights"] == r["dtype"])
vae = next(r for r in rows if r["workload"] == "vae21")
rep = json.load(open(f"{w}/calibrated.json"))
t = rep["time_plan"]
want = t["step_flops"] / (fwd["tflops_per_s"] * 1e12)
assert abs(t["step_compute_seconds"] - want) <= 1e-9 * want, (t["step_compute_seconds"], want)
# The tiny T2V's VAE (base width 3, no patch) decodes 256 x 256 x 17 on one rank (--no-vae-parallel).
wd, ht, fr = (int(x) for x in vae["shape"].split("x"))
units = 256 * 256 * 17 * (3 / 96) ** 2
want = units * vae["seconds"] / (wd * ht * fr)
assert abs(t["decode_seconds"] - want) <= 1e-9 * want, (t["decode_seconds"], want)
assert "calibrated by" in t["rates"], t["rates"]
PY
echo '[{"workload": "vae21", "shape": "96x64x9", "seconds": 1}]' > "$work/no-a14b.json"
expect "a calibration file without an a14b row" 4 3 'no "a14b" row in its run dtype' -- "${common[@]}" \
  --plan-for h200 --calibration "$work/no-a14b.json" --output "$work/x.mp4"
expect "--calibration without --plan-for" 1 2 "calibrates the time plan of --plan-for" -- "${common[@]}" \
  --calibration "$work/forward_bench.json" --output "$work/x.mp4"
summary
