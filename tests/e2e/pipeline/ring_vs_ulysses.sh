#!/usr/bin/env bash
# Ring attention (fused kernels returning the log-sum-exp, blocks merged in float32) and Ulysses split the
# same tokens over 2 ranks; every step's latents and the frames of the two runs agree within 1e-5, and both
# with one rank (float32, CPU).
#   ring_vs_ulysses.sh GENERATE COMPARE CASE_DIR WORK_DIR STEPS [omni-generate flags...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; compare=$2; case_dir=$3; work=$4; nsteps=$5; shift 5
rm -rf "$work"; mkdir -p "$work"
run() {
  local name=$1 np=$2; shift 2
  mpi "$np" "$gen" --model "$case_dir/model" --dtype float32 --vae-dtype float32 --output "$work/$name.mp4" \
    --save-tensors "$work/$name.safetensors" --log-level warn "$@"
}
run one 1 "$@"
run ring 2 --ring-degree 2 "$@"
run ulysses 2 --ulysses-degree 2 "$@"
keys=$(for ((i = 0; i < nsteps; i++)); do printf 'step%02d.latents,' "$i"; done)frames
"$compare" "$work/ring.safetensors" "$work/ulysses.safetensors" --keys "$keys" --tolerance 1e-5
"$compare" "$work/ring.safetensors" "$work/one.safetensors" --keys "$keys" --tolerance 1e-5
"$compare" "$work/ulysses.safetensors" "$work/one.safetensors" --keys "$keys" --tolerance 1e-5
echo "ok: ring 2 and ulysses 2 agree within 1e-5"
