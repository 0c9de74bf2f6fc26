#!/usr/bin/env bash
# --layout auto (issue 14) on the built-in default model (8 heads, guidance on), the README's headline command
# on 4 ranks with one prompt:
#   - the dry run names a layout in which every rank computes (cfg x ring x ulysses = 4) and says why;
#   - the frames equal the one-rank run within 1e-5 (float32), and the report's per-rank compute time shows
#     all four ranks working (with --layout manual, dp 4, three ranks only repeat the video for the gathers);
#   - the sidecar records the layout and its choice;
#   - an 8-line prompts file on the same 4 ranks stays dp 4, and with 7 of its videos written (a resumed job)
#     puts all 4 ranks on the last one; 2 prompts take dp 2 x cfg 2.
#   auto_layout.sh GENERATE COMPARE WORK_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; cmp=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
export OMNI_CACHE_DIR="$work/cache"
common=(--height 64 --width 64 --num-frames 5 --num-inference-steps 4 --dtype float32 --device cpu --seed 5)
headline=(--use-hsdp --hsdp-shard-size 4 --prompt "A cat playing piano")

mpi 4 -x OMNI_CACHE_DIR "$gen" "${headline[@]}" "${common[@]}" --dry-run >"$work/dry.out" 2>"$work/dry.err"
grep -qx "layout: world 4: dp 1 x cfg 2 x ring 1 x ulysses 2; hsdp replicate 1 x shard 4" "$work/dry.out" ||
  { cat "$work/dry.out"; fail "the dry run does not put every rank on the one video"; }
grep -qx "layout choice: auto: 1 video on 4 ranks: cfg 2 x ulysses 2; 8 heads" "$work/dry.out" ||
  fail "the dry run does not say why"
grep -q "info 0/4\] layout auto: 1 video on 4 ranks: cfg 2 x ulysses 2; 8 heads" "$work/dry.err" ||
  { cat "$work/dry.err"; fail "the log does not say the choice"; }

"$gen" "${common[@]}" --prompt "A cat playing piano" --output "$work/one.mp4" --save-tensors "$work/one.safetensors" \
  2>/dev/null
mpi 4 -x OMNI_CACHE_DIR "$gen" "${headline[@]}" "${common[@]}" --output "$work/auto.mp4" --save-tensors "$work/auto.safetensors" \
  --report "$work/auto.json" 2>/dev/null
mpi 4 -x OMNI_CACHE_DIR "$gen" "${headline[@]}" "${common[@]}" --layout manual --output "$work/dp.mp4" --report "$work/dp.json" 2>/dev/null
"$cmp" "$work/auto.safetensors" "$work/one.safetensors" --keys latents,frames --tolerance 1e-5

python3 - "$work/auto.json" "$work/dp.json" "$work/auto.mp4.json" <<'EOF'
import json, sys
auto, dp, side = (json.load(open(p)) for p in sys.argv[1:4])
a = [r["compute_seconds"] for r in auto["ranks"]]; d = [r["compute_seconds"] for r in dp["ranks"]]
print("compute seconds per rank: auto %s, dp 4 %s" % (["%.2f" % x for x in a], ["%.2f" % x for x in d]))
if not all(x > 0 for x in a): sys.exit("FAIL: a rank did no work under the automatic layout")
if not (d[0] > 0 and all(x == 0 for x in d[1:])): sys.exit("FAIL: dp 4 should leave ranks 1-3 without a video")
if auto["layout"]["choice"] != "auto: 1 video on 4 ranks: cfg 2 x ulysses 2; 8 heads":
    sys.exit("FAIL: report layout choice %r" % auto["layout"]["choice"])
if not side["layout"].startswith("world 4: dp 1 x cfg 2 x ring 1 x ulysses 2") or not side["layout_choice"].startswith("auto:"):
    sys.exit("FAIL: sidecar layout %r / %r" % (side["layout"], side.get("layout_choice")))
EOF

printf 'prompt %s\n' 1 2 3 4 5 6 7 8 >"$work/eight.txt"
mpi 4 -x OMNI_CACHE_DIR "$gen" --use-hsdp --hsdp-shard-size 4 --prompts-file "$work/eight.txt" "${common[@]}" --output "$work/e.mp4" \
  --dry-run >"$work/eight.out" 2>/dev/null
grep -q "^layout: world 4: dp 4 x cfg 1 x ring 1 x ulysses 1" "$work/eight.out" ||
  { grep layout "$work/eight.out"; fail "8 prompts on 4 ranks should stay dp 4"; }
# Resumed with one video left: every rank on it (rank 0's view of what is written).
touch "$work"/e-000{0,1,2,3,4,5,6}.mp4
mpi 4 -x OMNI_CACHE_DIR "$gen" --use-hsdp --hsdp-shard-size 4 --prompts-file "$work/eight.txt" "${common[@]}" --output "$work/e.mp4" \
  --dry-run >"$work/resume.out" 2>/dev/null
grep -qx "layout choice: auto: 1 video on 4 ranks: cfg 2 x ulysses 2; 8 heads (7 of 8 already written)" "$work/resume.out" ||
  { grep layout "$work/resume.out"; fail "a resumed list with one video left should use every rank on it"; }
printf 'prompt %s\n' 1 2 >"$work/two.txt"
mpi 4 -x OMNI_CACHE_DIR "$gen" --prompts-file "$work/two.txt" "${common[@]}" --output "$work/t.mp4" --dry-run >"$work/two.out" 2>/dev/null
grep -q "^layout: world 4: dp 2 x cfg 2 x ring 1 x ulysses 1" "$work/two.out" ||
  { grep layout "$work/two.out"; fail "2 prompts on 4 ranks should be dp 2 x cfg 2"; }
echo "ok: automatic layout"
