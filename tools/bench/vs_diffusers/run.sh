#!/usr/bin/env bash
# The same work, timed side by side: diffusers (tools/reference's pinned environment) and omni-generate on one
# generated checkpoint, same settings, same thread count, one after the other; prints the time per denoising
# step of each, the ratio, and the frames' max difference (float32, CPU).
#
#   tools/bench/vs_diffusers/run.sh [BUILD_DIR]
#
# Environment: THREADS (default: all cores), WORK (default: $BUILD_DIR/vs_diffusers), REFERENCE_VENV, and the
# model and video sizes below (HEADS, HEAD_DIM, LAYERS, FFN, HEIGHT, WIDTH, FRAMES, STEPS). The default sizes
# make the matrix products dominate: width 512 (8 x 64), ffn 2048, 1,280 video tokens per frame group, CFG on.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
threads=${THREADS:-$(nproc)}
work=${WORK:-$build/vs_diffusers}
venv=${REFERENCE_VENV:-$root/tools/reference/.venv}
heads=${HEADS:-8}; head_dim=${HEAD_DIM:-64}; layers=${LAYERS:-4}; ffn=${FFN:-2048}
height=${HEIGHT:-256}; width=${WIDTH:-256}; frames=${FRAMES:-17}; steps=${STEPS:-6}

bash "$root/tools/reference/setup.sh" > /dev/null
mkdir -p "$work"
model="$work/model-h${heads}x${head_dim}-l${layers}-f${ffn}"
[ -d "$model" ] || "$build/tools/make_checkpoint/omni-make-checkpoint" --kind t2v-a14b --preset small \
  --heads "$heads" --head-dim "$head_dim" --layers "$layers" --ffn-dim "$ffn" --seed 7 --output "$model" > /dev/null

settings=(--prompt "A cat playing piano in a sunlit room" --negative-prompt "blurry, low quality"
  --height "$height" --width "$width" --num-frames "$frames" --num-inference-steps "$steps"
  --guidance-scale 4 --guidance-scale-2 3 --seed 11 --max-sequence-length 32)

echo "vs_diffusers: $model, ${width}x${height}x${frames}, $steps steps, $threads thread(s)"
d_line=$(OMP_NUM_THREADS=$threads "$venv/bin/python" "$root/tools/bench/vs_diffusers/diffusers_run.py" \
  --model "$model" --out "$work/diffusers.safetensors" --threads "$threads" "${settings[@]}" 2>/dev/null |
  grep '^diffusers: ')
OMP_NUM_THREADS=$threads "$build/apps/omni-generate" --model "$model" --device cpu --dtype float32 \
  --vae-dtype float32 --output "$work/omni.mp4" --save-tensors "$work/omni.safetensors" --report "$work/report.json" \
  --overwrite --log-level warn "${settings[@]}"
diff=$("$build/apps/omni-compare/omni-compare" "$work/omni.safetensors" "$work/diffusers.safetensors" --keys frames |
  awk '$1 == "frames" {print $4}' || true)
"$venv/bin/python" - "$d_line" "$work/report.json" "$steps" "$diff" <<'PY'
import json, sys
d = json.loads(sys.argv[1].split(": ", 1)[1])
ours = json.load(open(sys.argv[2]))["timings"]["denoise"] / int(sys.argv[3])
print("| threads | diffusers s/step | omni-generate s/step | omni / diffusers | frames max abs diff |")
print("|---------|------------------|----------------------|------------------|---------------------|")
print(f"| {d['threads']:7d} | {d['per_step']:16.3f} | {ours:20.3f} | {ours / d['per_step']:16.2f} | {sys.argv[4]:>19} |")
PY
