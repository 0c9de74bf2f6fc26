#!/usr/bin/env bash
# Layout independence where the batch or the token rows change, in bfloat16 at TI2V-5B's width (3072; freq_dim
# 256), text mode and image mode (per-token timesteps), every rank on one thread:
# - bit for bit: one rank (the CFG batch [cond; uncond]), CFG 2 (one branch per rank, as diffusers calls the
#   transformer once per branch) and CFG 2 x HSDP 2. Provably the same arithmetic, whatever the CPU: every
#   product of the transformer runs on one batch row at a time (models::wan::each_batch_row), so each sees one
#   branch's rows on every layout. (GEMM libraries choose kernels by row count: a one-row GEMV on every CPU,
#   other blockings for a bfloat16 block on an AVX-512 Xeon, issue 36.) Checked at two CPU kernel levels
#   (lib.sh cpu_kernel_levels), so that equal bits resting on one kernel choice show up here.
# - within bfloat16's rounding: Ulysses 2 gives each rank half the token rows per product, another summation
#   order. Its latents may differ from one rank's by at most twice what bfloat16 itself moves them (one rank in
#   bfloat16 against the same weights in float32, measured in the same run: 0.12 of latents up to 8 here): two
#   roundings of one result differ by at most the sum of their errors, and a token-order or head-split bug moves
#   them by far more. (The frames are the latents decoded alike; this tiny random VAE amplifies any change.)
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
        --num-frames 5 --num-inference-steps 2 --max-sequence-length 16 --seed 5 --log-level warn)
latents_diff() {  # latents_diff A B: the max abs difference of the final latents
  "$cmp" "$work/$1.safetensors" "$work/$2.safetensors" --keys latents | awk '$1 == "latents" { print $4 }'
}
for level in $(cpu_kernel_levels); do
  use_cpu_kernels "$level"
  for mode in text image; do
    extra=(--dtype bfloat16)
    [ $mode = image ] && extra+=(--image "$image")
    saved_run "$level-$mode-np1" 1 "${extra[@]}"
    saved_run "$level-$mode-cfg2" 2 "${extra[@]}" --layout manual --cfg-parallel-size 2
    saved_run "$level-$mode-cfg2-hsdp2" 4 "${extra[@]}" --layout manual --cfg-parallel-size 2 --use-hsdp \
      --hsdp-shard-size 2 --hsdp-replicate-size 2
    for layout in cfg2 cfg2-hsdp2; do
      if "$cmp" "$work/$level-$mode-$layout.safetensors" "$work/$level-$mode-np1.safetensors" --keys latents,frames \
        --tolerance 0 >"$work/cmp-$level-$mode-$layout.log" 2>&1; then
        pass "$level kernels, $mode: $layout == one rank (bit for bit)"
      else
        flunk "$level kernels, $mode: $layout != one rank"; cat "$work/cmp-$level-$mode-$layout.log"
      fi
    done
  done
  # The cap reached the ranks (the report names the kernels LibTorch ran).
  kernels=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["cpu_kernels"])' \
    "$work/$level-text-cfg2-hsdp2.json")
  case $level in
    native) want="" ;;
    avx2) want="AVX2, oneDNN up to AVX2" ;;
    sse) want="DEFAULT, oneDNN up to SSE41" ;;
  esac
  if [ -z "$want" ] || [ "$kernels" = "$want" ]; then
    pass "$level kernels: the ranks ran $kernels"
  else
    flunk "$level kernels: the ranks ran '$kernels', not '$want'"
  fi
done
use_cpu_kernels native
# The image reached the run (else image mode checked nothing text mode did not).
if "$cmp" "$work/native-image-np1.safetensors" "$work/native-text-np1.safetensors" --keys latents --tolerance 0 \
  >/dev/null 2>&1; then
  flunk "image mode gave text mode's latents"
else
  pass "image mode differs from text mode"
fi
# Ulysses 2 against one rank, within twice bfloat16's own effect.
for mode in text image; do
  extra=()
  [ $mode = image ] && extra=(--image "$image")
  saved_run "$mode-f32" 1 "${extra[@]}" --dtype float32
  saved_run "$mode-u2" 2 "${extra[@]}" --dtype bfloat16 --layout manual --ulysses-degree 2
  bf16=$(latents_diff "native-$mode-np1" "$mode-f32")
  if awk -v b="$bf16" 'BEGIN { exit !(b > 0) }'; then
    pass "$mode: bfloat16 moves the one-rank latents by $bf16 from float32's"
  else
    flunk "$mode: the bfloat16 latents equal the float32 ones (max abs difference '$bf16'): --dtype had no effect"
  fi
  if "$cmp" "$work/$mode-u2.safetensors" "$work/native-$mode-np1.safetensors" --keys latents \
    --tolerance "$(awk -v b="$bf16" 'BEGIN { printf "%.9g", 2 * b }')" >"$work/cmp-$mode-u2.log" 2>&1; then
    pass "$mode: ulysses 2 latents within 2 x $bf16 of one rank's ($(latents_diff "$mode-u2" "native-$mode-np1"))"
  else
    flunk "$mode: ulysses 2 latents differ from one rank's by more than 2 x $bf16"; cat "$work/cmp-$mode-u2.log"
  fi
done
rm -rf "$work/model"  # 316 MiB (CI's disk is shared)
summary
