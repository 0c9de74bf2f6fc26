#!/usr/bin/env bash
# The time plan on this CPU (issue 44):
#   - a 2-rank run's --report holds time_plan: the predicted step (the CPU profile measured at start-up, "this
#     CPU" in its rates) beside the measured one, which is the slowest rank's median step of its ranks' entries,
#     and step_ratio = measured / predicted; the log says both;
#   - a dry run on the CPU (no --plan-for) prints the time plan and every layout of its world by it, its own
#     marked, and its report holds them;
#   - the automatic layout is the fastest measured in at least 4 of the 6 jobs of tools/bench/time_plan.sh's
#     "pick" part (each job's every layout run with its degrees given; about 3 minutes).
#   time_plan.sh GENERATE BUILD_DIR MODEL WORK_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; build=$2; model=$3; work=$4
rm -rf "$work"; mkdir -p "$work"
common=(--model "$model" --height 48 --width 64 --num-frames 9 --num-inference-steps 5 --dtype float32 --device cpu
  --prompt "A red fox runs through the snow")

mpi 2 "$gen" "${common[@]}" --ulysses-degree 2 --output "$work/run.mp4" --report "$work/run.json" 2>"$work/run.log"
grep -q "info 0/2\] time plan: .* s per step predicted, .* s measured" "$work/run.log" ||
  { cat "$work/run.log"; fail "the run's log does not put the predicted step beside the measured one"; }
python3 - "$work/run.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1])); t = r.get("time_plan")
if not t: sys.exit("FAIL: the report has no time_plan")
if not t["rates"].startswith("this CPU, 2 of 2 rank(s)"): sys.exit("FAIL: rates %r" % t["rates"])
p, m = t["predicted"], t["measured"]
if p["steps"] != 5 or not p["step_seconds"] > 0: sys.exit("FAIL: predicted %r" % p)
steps = [k["step_seconds"] for k in r["ranks"]]
if not all(s > 0 for s in steps): sys.exit("FAIL: a rank has no measured step: %r" % steps)
if m["step_seconds"] != max(steps): sys.exit("FAIL: measured step %r is not the slowest rank's %r" % (m["step_seconds"], steps))
if abs(t["step_ratio"] - m["step_seconds"] / p["step_seconds"]) > 1e-9: sys.exit("FAIL: step_ratio %r" % t["step_ratio"])
# The measured video: text encode + steps x step + decode, the decode the writing rank's.
if abs(m["video_seconds"] - (m["text_encode_seconds"] + 5 * m["step_seconds"] + m["decode_seconds"])) > 1e-9:
    sys.exit("FAIL: measured video_seconds %r" % m)
if not m["decode_seconds"] > 0: sys.exit("FAIL: no measured decode")
print("time plan: predicted %.4f s per step, measured %.4f s (x%.2f)" % (p["step_seconds"], m["step_seconds"], t["step_ratio"]))
PY

mpi 2 "$gen" "${common[@]}" --output "$work/dry.mp4" --dry-run --report "$work/dry.json" >"$work/dry.out" 2>/dev/null
grep -q "^time plan (estimate, the slowest rank; this CPU, " "$work/dry.out" ||
  { cat "$work/dry.out"; fail "a CPU dry run prints no time plan"; }
grep -q "^  \* dp 1 x cfg 2 x ring 1 x ulysses 1: job " "$work/dry.out" ||
  { grep -A8 "^layouts" "$work/dry.out"; fail "the dry run does not list its own layout, marked"; }
python3 - "$work/dry.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))["time_plan"]
names = sorted(l["layout"] for l in t["layouts"])
want = sorted(["dp 1 x cfg 2 x ring 1 x ulysses 1", "dp 1 x cfg 1 x ring 1 x ulysses 2",
               "dp 1 x cfg 1 x ring 2 x ulysses 1", "dp 2 x cfg 1 x ring 1 x ulysses 1"])
if names != want: sys.exit("FAIL: the layouts of 2 ranks: %r" % names)
if [l["this_run"] for l in t["layouts"]].count(True) != 1: sys.exit("FAIL: not one layout marked as this run's")
PY

PART=pick PICKS=4 WORK="$work/bench" bash "$SOURCE_DIR/tools/bench/time_plan.sh" "$build" | tee "$work/pick.out" ||
  fail "the automatic layout was the fastest measured in fewer than 4 of 6 jobs"
echo "ok: the time plan"
