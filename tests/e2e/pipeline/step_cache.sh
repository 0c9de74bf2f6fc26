#!/usr/bin/env bash
# --step-cache: threshold 0 gives exactly the uncached frames; thresholds that skip steps give the same frames
# and the same skip counts on one rank and on ulysses 2 x cfg 2 with HSDP (the ranks' decisions agree); the
# report's skipped count is the number of steps the progress log marks "cached". Two videos on 2 data-parallel
# groups whose HSDP shard group spans both (the groups decide apart and a skipping group still joins the
# gathers) each equal their own one-rank run.
#   step_cache.sh GENERATE COMPARE MODEL_DIR WORK_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; cmp=$2; model=$3; work=$4
rm -rf "$work"; mkdir -p "$work"
common=(--model "$model" --height 32 --width 48 --num-frames 5 --num-inference-steps 10 --guidance-scale 4
        --guidance-scale-2 3 --max-sequence-length 16 --dtype float32 --device cpu --log-level info)
skipped() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['step_cache']['skipped'])" "$1"; }

"$gen" "${common[@]}" --prompt "A fox" --seed 3 --output "$work/none.mp4" --save-tensors "$work/none.safetensors" 2>/dev/null
"$gen" "${common[@]}" --prompt "A fox" --seed 3 --step-cache teacache --step-cache-threshold 0 --output "$work/t0.mp4" \
  --save-tensors "$work/t0.safetensors" --report "$work/t0.json" 2>/dev/null
"$cmp" "$work/t0.safetensors" "$work/none.safetensors" --keys latents,frames --tolerance 0 >/dev/null
[ "$(skipped "$work/t0.json")" = 0 ] || fail "threshold 0 skipped"
echo "ok: teacache at threshold 0 is the uncached run exactly"

for mode in "teacache 0.5" "fbcache 0.1" "fbcache 0.3"; do
  set -- $mode
  tag=$1-$2
  "$gen" "${common[@]}" --prompt "A fox" --seed 3 --step-cache "$1" --step-cache-threshold "$2" \
    --output "$work/$tag-1.mp4" --save-tensors "$work/$tag-1.safetensors" --report "$work/$tag-1.json" 2>"$work/$tag-1.log"
  mpi 4 "$gen" "${common[@]}" --prompt "A fox" --seed 3 --step-cache "$1" --step-cache-threshold "$2" \
    --ulysses-degree 2 --cfg-parallel-size 2 --use-hsdp --output "$work/$tag-4.mp4" \
    --save-tensors "$work/$tag-4.safetensors" --report "$work/$tag-4.json" 2>"$work/$tag-4.log"
  "$cmp" "$work/$tag-4.safetensors" "$work/$tag-1.safetensors" --keys latents,frames --tolerance 1e-5 >/dev/null ||
    { "$cmp" "$work/$tag-4.safetensors" "$work/$tag-1.safetensors" --keys latents,frames --tolerance 1e-5; exit 1; }
  s1=$(skipped "$work/$tag-1.json"); s4=$(skipped "$work/$tag-4.json")
  logged=$(grep -c 'generate step .*, cached)' "$work/$tag-1.log" || true)
  if [ "$s1" -lt 1 ] || [ "$s1" != "$s4" ] || [ "$s1" != "$logged" ]; then
    fail "$tag: skipped $s1 on 1 rank, $s4 on 4, $logged steps logged as cached"
  fi
  # Skipping changes the video (the check above compares like with like).
  if "$cmp" "$work/$tag-1.safetensors" "$work/none.safetensors" --keys frames --tolerance 1e-6 >/dev/null; then
    fail "$tag skipped $s1 steps but the frames equal the uncached ones"
  fi
  echo "ok: $tag: $s1 of 10 steps skipped, same frames and decisions on 1 and 4 ranks"
done

# With cfg parallelism each rank judges its own branch: the uncond rank must weigh the uncond rows. Here
# (measured on one rank, cond / uncond; steps from 0) the first-block changes under 0.118 are steps 1 (0.104 / 0.105) and 5
# (0.089 / 0.090), skipped; step 8's is 0.1154 / 0.1199, so it is computed. A cfg rank that judged the wrong
# rows (before issue 38's fix the uncond rank read its branch as unchanged) would skip step 8 on the cond
# rank's word alone: 3 skips.
neg=(--negative-prompt "多云的城市夜景, static, blurry, 低质量")
"$gen" "${common[@]}" "${neg[@]}" --prompt "A fox" --seed 3 --step-cache fbcache --step-cache-threshold 0.118 \
  --output "$work/neg-1.mp4" --save-tensors "$work/neg-1.safetensors" --report "$work/neg-1.json" 2>/dev/null
mpi 2 "$gen" "${common[@]}" "${neg[@]}" --prompt "A fox" --seed 3 --step-cache fbcache --step-cache-threshold 0.118 \
  --cfg-parallel-size 2 --output "$work/neg-2.mp4" --save-tensors "$work/neg-2.safetensors" \
  --report "$work/neg-2.json" 2>/dev/null
s1=$(skipped "$work/neg-1.json"); s2=$(skipped "$work/neg-2.json")
[ "$s1" = 2 ] && [ "$s2" = 2 ] || fail "cfg parallel: skipped $s1 steps on one rank and $s2 on cfg 2 (want 2 and 2)"
"$cmp" "$work/neg-2.safetensors" "$work/neg-1.safetensors" --keys latents,frames --tolerance 1e-5 >/dev/null ||
  fail "cfg parallel: the frames differ from one rank's"
echo "ok: cfg 2 ranks each judge their own branch (skipped $s1 on one rank, $s2 on cfg 2)"

# Two videos, dp 2 x ulysses 2, one HSDP shard group over all 4 ranks.
printf '{"prompt": "A fox", "seed": 3, "output": "%s"}\n{"prompt": "A boat on a lake", "seed": 4, "output": "%s"}\n' \
  "$work/dp-fox.mp4" "$work/dp-boat.mp4" > "$work/two.jsonl"
mpi 4 "$gen" "${common[@]}" --prompts-file "$work/two.jsonl" --step-cache fbcache --step-cache-threshold 0.3 \
  --ulysses-degree 2 --use-hsdp --hsdp-shard-size 4 --save-tensors "$work/dp.safetensors" 2>"$work/dp.log"
"$gen" "${common[@]}" --prompt "A boat on a lake" --seed 4 --step-cache fbcache --step-cache-threshold 0.3 \
  --output "$work/boat-1.mp4" --save-tensors "$work/boat-1.safetensors" 2>/dev/null
"$cmp" "$work/dp-0000.safetensors" "$work/fbcache-0.3-1.safetensors" --keys latents,frames --tolerance 1e-5 >/dev/null
"$cmp" "$work/dp-0001.safetensors" "$work/boat-1.safetensors" --keys latents,frames --tolerance 1e-5 >/dev/null
echo "ok: data-parallel groups sharing shards decide apart, each video as on one rank"
