#!/usr/bin/env bash
# --vae-parallel chosen by the memory plan (docs/DESIGN.md section 12): without --vae-parallel or
# --no-vae-parallel a video's group of several ranks decodes in bands when that lowers the job's planned peak.
# On a TI2V-5B-layout checkpoint with a VAE of base width 32 (its decode outweighs the rest at 256x256):
#   - 2 ranks (ulysses 2): chosen; the dry run says so with both peaks, its plan is --vae-parallel's and lower
#     than --no-vae-parallel's; the run decodes on both ranks, its frames are one rank's (1e-5), and the sidecar
#     records vae-parallel true from the memory plan;
#   - --no-vae-parallel: refused, the plan and the run decode on one rank;
#   - not chosen where it would not lower the peak (the reference TI2V-5B tiny model: its VAE is a few MiB) nor
#     where a height has fewer latent rows than the group has ranks; both flags: one usage error.
#   vae_parallel_auto.sh GENERATE COMPARE MAKE_CHECKPOINT REFERENCE_DIR WORK_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; cmp=$2; make=$3; ref=$4; work=$5
rm -rf "$work"; mkdir -p "$work"
"$make" --kind ti2v-5b --preset tiny --vae-base-dim 32 --output "$work/model" >/dev/null 2>&1
common=(--model "$work/model" --height 256 --width 256 --num-frames 9 --num-inference-steps 2 --dtype float32
        --max-sequence-length 16 --prompt "A lighthouse on a cliff" --device cpu --log-level warn)

# plan NAME NP FLAGS...: the dry run's text and --report.
plan() {
  local name=$1 np=$2; shift 2
  mpi "$np" "$gen" "$@" --output "$work/$name.mp4" --dry-run --report "$work/$name-plan.json" >"$work/$name-dry.out"
}
peak() {  # the job's planned peak in bytes: the most of any rank
  python3 -c "import json, sys; print(max(r['planned_peak_bytes'] for r in json.load(open(sys.argv[1]))['ranks']))" "$1"
}

plan auto 2 "${common[@]}" --ulysses-degree 2
plan on 2 "${common[@]}" --ulysses-degree 2 --vae-parallel
plan off 2 "${common[@]}" --ulysses-degree 2 --no-vae-parallel
grep -q "^vae parallel: on (chosen: it lowers the planned peak from .* (rank 0 at decode) to .*; --no-vae-parallel" \
  "$work/auto-dry.out" && pass "chosen, with both peaks" || { grep "vae parallel" "$work/auto-dry.out"; flunk "not chosen"; }
grep -q "^  vae-parallel: true   \[memory plan\]" "$work/auto-dry.out" && pass "its source: the memory plan" ||
  flunk "the settings do not say where vae-parallel came from"
grep -q "^vae parallel: off (--no-vae-parallel)" "$work/off-dry.out" && pass "--no-vae-parallel refuses it" ||
  flunk "--no-vae-parallel is not said"
python3 - "$work/auto-plan.json" "$work/on-plan.json" "$work/off-plan.json" <<'PY' && pass "the chosen plan is --vae-parallel's, lower than one rank's decode" || flunk "plans"
import json, sys
auto, on, off = (json.load(open(p)) for p in sys.argv[1:])
keys = ("planned_peak_bytes", "planned_phases")
assert [[r[k] for k in keys] for r in auto["ranks"]] == [[r[k] for k in keys] for r in on["ranks"]], "auto != on"
assert max(r["planned_peak_bytes"] for r in auto["ranks"]) < max(r["planned_peak_bytes"] for r in off["ranks"])
assert all("decode" in r["planned_phases"] for r in auto["ranks"]), "a rank of the group plans no decode"
assert "decode" not in off["ranks"][1]["planned_phases"], "rank 1 decodes with --no-vae-parallel"
assert auto["vae_parallel_choice"].startswith("on (chosen"), auto["vae_parallel_choice"]
PY

# The runs: one rank, the automatic choice on 2 ranks, and --no-vae-parallel on 2 ranks.
"$gen" "${common[@]}" --output "$work/one.mp4" --save-tensors "$work/one.safetensors" 2>/dev/null
for name in auto off; do
  flags=(--ulysses-degree 2); [ "$name" = off ] && flags+=(--no-vae-parallel)
  mpi 2 "$gen" "${common[@]}" "${flags[@]}" --output "$work/$name.mp4" --save-tensors "$work/$name.safetensors" \
    --report "$work/$name-run.json" 2>/dev/null
  if "$cmp" "$work/$name.safetensors" "$work/one.safetensors" --keys latents,frames --tolerance 1e-5 >"$work/$name-cmp.log"; then
    pass "$name: the frames are one rank's"
  else
    flunk "$name: the frames differ from one rank's"; cat "$work/$name-cmp.log"
  fi
done
python3 - "$work" <<'PY' && pass "the run decodes as planned; the sidecar records the choice" || flunk "runs"
import json, sys
w = sys.argv[1]
auto = json.load(open(w + "/auto-run.json")); off = json.load(open(w + "/off-run.json"))
assert all(r["decode_seconds"] > 0 for r in auto["ranks"]), "a rank of the group did not decode"
assert off["ranks"][1]["decode_seconds"] == 0, "rank 1 decoded with --no-vae-parallel"
side = json.load(open(w + "/auto.mp4.json"))
assert side["settings"]["vae-parallel"] is True and side["sources"]["vae-parallel"] == "memory plan", side["sources"]
side = json.load(open(w + "/off.mp4.json"))
assert side["settings"]["vae-parallel"] is False and side["settings"]["no-vae-parallel"] is True
PY

# Not chosen: a VAE of a few MiB (the host's fixed decode overhead is the peak either way), and a 32-pixel
# height's 2 latent rows over a group of 4 (cfg 2 x ulysses 2).
tiny=(--model "$ref/ti2v-5b-tiny/model" --num-frames 9 --prompt x --device cpu --log-level warn)
plan small 2 "${tiny[@]}" --height 256 --width 256 --ulysses-degree 2
grep -q "^vae parallel: off (not chosen: it would not lower the planned peak, " "$work/small-dry.out" &&
  pass "not chosen where it does not lower the peak" || { grep "vae parallel" "$work/small-dry.out"; flunk "small"; }
plan rows 4 "${tiny[@]}" --height 32 --width 64 --cfg-parallel-size 2 --ulysses-degree 2
grep -q "^vae parallel: off (a 32-pixel height has 2 latent rows, fewer than the 4 ranks" "$work/rows-dry.out" &&
  pass "not chosen where the group cannot split the rows" || { grep "vae parallel" "$work/rows-dry.out"; flunk "rows"; }
set +e
out=$(mpi 2 "$gen" "${tiny[@]}" --height 256 --width 256 --vae-parallel --no-vae-parallel --output "$work/both.mp4" 2>&1)
rc=$?
set -e
[ "$rc" = 2 ] && [ "$(grep -c 'error: --vae-parallel and --no-vae-parallel contradict' <<<"$out")" = 1 ] &&
  pass "both flags: one usage error" || { echo "$out"; flunk "both flags: rc $rc"; }
rm -rf "$work/model"
summary
