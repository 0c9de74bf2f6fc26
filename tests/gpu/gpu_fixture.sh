#!/usr/bin/env bash
# One fixture case on --device cuda against diffusers' float32 CPU records (ctest label gpu):
#   gpu_fixture.sh GENERATE COMPARE CASE_DIR WORK_DIR STEPS [omni-generate flags...]
# float32 on the GPU: the noise is drawn on the CPU as diffusers does (init_latents exact); the text
# embeddings, every step's latents and the frames agree within what GPU float32 kernels change (other
# summation orders, and cuDNN's TF32 convolutions in the VAE, on by default as in PyTorch: 2^-11 relative
# per product) -- 1e-3 relative to the tensor's largest value.
# bfloat16 on the GPU (the VAE in float32): every transformer call's output within 3e-2 of the largest
# value: bfloat16 keeps 8 bits (2^-9 relative per rounding) and the tiny models' few layers round a few
# dozen times along any path. Frames are not compared in bfloat16: these random-weight VAE decoders amplify
# a latent's rounding past any useful bound (docs/DESIGN.md section 3).
set -euo pipefail
gen=$1; compare=$2; case_dir=$3; work=$4; nsteps=$5; shift 5
rm -rf "$work"; mkdir -p "$work"
exp="$case_dir/expected.safetensors"
steps=$(for ((i = 0; i < nsteps; i++)); do printf 'step%02d.latents,' "$i"; done)

"$gen" --model "$case_dir/model" --device cuda --dtype float32 --vae-dtype float32 --output "$work/f32.mp4" \
  --save-tensors "$work/f32.safetensors" --log-level warn "$@"
"$compare" "$work/f32.safetensors" "$exp" --keys init_latents --tolerance 0
"$compare" "$work/f32.safetensors" "$exp" --keys "prompt_embeds,${steps}frames" --rel-tolerance 1e-3

"$gen" --model "$case_dir/model" --device cuda --dtype bfloat16 --vae-dtype float32 --output "$work/bf16.mp4" \
  --dump-tensors "$work/bf16-dump.safetensors" --save-tensors "$work/bf16.safetensors" --log-level warn "$@"
calls=$(for ((c = 0; c < 2 * nsteps; c++)); do printf 'call%02d.out,' "$c"; done)
"$compare" "$work/bf16-dump.safetensors" "$exp" --keys "${calls%,}" --rel-tolerance 3e-2 --allow-missing
"$compare" "$work/bf16.safetensors" "$exp" --keys init_latents --tolerance 0
echo "ok: $case_dir on cuda (float32 and bfloat16)"
