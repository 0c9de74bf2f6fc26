#!/usr/bin/env bash
# Wan2.2-S2V on --device cuda against Wan2.2's own float32 CPU recording (ctest label gpu; tests/e2e/parity s2v-*):
#   gpu_s2v.sh GENERATE COMPARE CASE_DIR WORK_DIR [omni-generate flags...]
# float32: each clip's noise drawn on the CPU (exact), the audio features, the latents of every step and clip and
# the frames within 1e-3 of their largest value (gpu_fixture.sh's bound: other summation orders, TF32
# convolutions). bfloat16 (the VAE and wav2vec2 in float32): the run completes, its MP4 has its AAC track, and
# its first clip's latents stay within 5e-2 of the recording's largest value.
set -euo pipefail
gen=$1; compare=$2; case_dir=$3; work=$4; shift 4
rm -rf "$work"; mkdir -p "$work"
model=$(dirname "$case_dir")/model
exp=$case_dir/expected.safetensors
keys=$(python3 -c "
import json, struct, sys
f = open(sys.argv[1], 'rb'); keys = json.loads(f.read(struct.unpack('<Q', f.read(8))[0]))
print(','.join(sorted(k for k in keys if k != '__metadata__')))" "$exp")
"$gen" --model "$model" --device cuda --dtype float32 --vae-dtype float32 --output "$work/f32.mp4" \
  --save-tensors "$work/f32.safetensors" --log-level warn "$@"
init=$(tr , '\n' <<<"$keys" | grep init_latents | paste -sd,)
rest=$(tr , '\n' <<<"$keys" | grep -v init_latents | paste -sd,)
"$compare" "$work/f32.safetensors" "$exp" --keys "$init" --tolerance 0
"$compare" "$work/f32.safetensors" "$exp" --keys "$rest" --rel-tolerance 1e-3
"$gen" --model "$model" --device cuda --dtype bfloat16 --vae-dtype float32 --output "$work/bf16.mp4" \
  --save-tensors "$work/bf16.safetensors" --log-level warn "$@"
"$compare" "$work/bf16.safetensors" "$exp" --keys clip00.latents --rel-tolerance 5e-2
[ "$(ffprobe -v error -select_streams a -show_entries stream=codec_name -of csv=p=0 "$work/bf16.mp4")" = aac ]
echo "ok: $case_dir on cuda (float32 and bfloat16)"
