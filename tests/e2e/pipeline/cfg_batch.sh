#!/usr/bin/env bash
# One rank runs the two guidance branches as one batch [cond; uncond]; CFG parallelism runs one branch per
# rank, as diffusers runs one per call. The time embedding is made per batch row, so both give the same bits:
# GEMM libraries take another kernel for one row than for two (a GEMV), and at real widths (3072 here, TI2V-5B's;
# freq_dim 256) a batched embedding differs in its last bits, which bfloat16 and the steps grow to 1e-2 in the
# latents. Checked bit for bit, text mode and image mode (per-token timesteps): one rank, CFG 2 and CFG 2 x HSDP 2,
# every rank on one thread. (Sequence parallelism gives each rank fewer token rows per GEMM, which is equal only
# to float rounding on some CPUs; the parity tests cover it with their tolerance.)
#   cfg_batch.sh GENERATE COMPARE MAKE_CHECKPOINT IMAGE WORK_DIR
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; cmp=$2; mk=$3; image=$4; work=$5
rm -rf "$work"; mkdir -p "$work"
export OMP_NUM_THREADS=1  # the one-rank run too (mpi gives each rank one): a GEMM split over threads sums apart
# TI2V-5B's transformer width (24 heads x 128) and time embedding; one block, the tiny text encoder and VAE.
"$mk" --kind ti2v-5b --preset tiny --heads 24 --head-dim 128 --ffn-dim 256 --freq-dim 256 --layers 1 \
  --dtype bfloat16 --seed 3 --output "$work/model" >/dev/null 2>&1 || fail "omni-make-checkpoint failed"
common=(--model "$work/model" --prompt "A red fox in the snow" --negative-prompt "blurry" --height 128 --width 128
        --num-frames 5 --num-inference-steps 2 --max-sequence-length 16 --dtype bfloat16 --seed 5 --log-level warn)
run() {  # run NAME NP FLAGS...
  local name=$1 np=$2; shift 2
  launch "$np" "$gen" "${common[@]}" "$@" --output "$work/$name.mp4" --save-tensors "$work/$name.safetensors" \
    >"$work/$name.log" 2>&1 || { cat "$work/$name.log"; fail "$name exited non-zero"; }
}
for mode in text image; do
  extra=()
  [ $mode = image ] && extra=(--image "$image")
  run "$mode-np1" 1 "${extra[@]}"
  run "$mode-cfg2" 2 "${extra[@]}" --layout manual --cfg-parallel-size 2
  run "$mode-cfg2-hsdp2" 4 "${extra[@]}" --layout manual --cfg-parallel-size 2 --use-hsdp --hsdp-shard-size 2 --hsdp-replicate-size 2
  for layout in cfg2 cfg2-hsdp2; do
    if "$cmp" "$work/$mode-$layout.safetensors" "$work/$mode-np1.safetensors" --keys latents,frames --tolerance 0 \
      >"$work/cmp-$mode-$layout.log" 2>&1; then
      pass "$mode: $layout == one rank (bit for bit)"
    else
      flunk "$mode: $layout != one rank"; cat "$work/cmp-$mode-$layout.log"
    fi
  done
done
# The image reached the run (else image mode checked nothing text mode did not).
if "$cmp" "$work/image-np1.safetensors" "$work/text-np1.safetensors" --keys latents --tolerance 0 >/dev/null 2>&1; then
  flunk "image mode gave text mode's latents"
else
  pass "image mode differs from text mode"
fi
summary
