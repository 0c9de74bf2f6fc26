#!/usr/bin/env bash
# FP8 weight quality and memory table (--weight-dtype float8_e4m3fn, --fp8-layers, --fp8-matmul) against the
# bf16 baseline (--weight-dtype auto), on random-weight checkpoints with few blocks at full layer widths.
#
# Usage: tools/bench/fp8_quality.sh [WORKDIR]          (default WORKDIR /tmp/fp8q)
# Env:   BUILD=build  DEVICE=cpu  STEPS=2  H=64 W=64 FRAMES=5  LAYERS=4
#        CKPTS="tiny a14b 5b"  HSDP_CKPT=a14b (empty: skip the HSDP-4 memory part)  NP=4
#        DTYPE=bfloat16  KEEP=0 (1: keep the generated checkpoints between runs)
#
# For each checkpoint: the same seed and prompt with bf16 weights, then FP8 ffn / attention / all, each with
# dequantize-then-matmul and with --fp8-matmul. Per mode: the relative error ||a-b||/||b|| of every transformer
# call's output (--dump-tensors callNN.out; max and mean over calls), of the final latents (--save-tensors
# 'latents'), and per-frame PSNR / SSIM of the frames vs bf16 from omni-compare (videos written with --crf 0,
# both sides encoded alike; a direct PSNR of the float 'frames' tensors is also given). Then HSDP 4 (mpirun -np
# NP --use-hsdp --hsdp-shard-size NP) bf16 vs FP8 ffn / all: per-rank memory and gather traffic from --report,
# the expected ratio from the checkpoint's float8 share, the memory plan vs the measured peak, and whether the
# FP8 HSDP run reproduces the single-rank FP8 run (layout independence).
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-$ROOT/build}
WORK=${1:-/tmp/fp8q}
GEN=$BUILD/apps/omni-generate
CMP=$BUILD/apps/omni-compare/omni-compare
MK=$BUILD/tools/make_checkpoint/omni-make-checkpoint
PY="python3 $ROOT/tools/bench/fp8_quality.py"
DEVICE=${DEVICE:-cpu}
STEPS=${STEPS:-2}
H=${H:-64}
W=${W:-64}
FRAMES=${FRAMES:-5}
LAYERS=${LAYERS:-4}
DTYPE=${DTYPE:-bfloat16}
CKPTS=${CKPTS:-"tiny a14b 5b"}
HSDP_CKPT=${HSDP_CKPT-a14b}
NP=${NP:-4}
KEEP=${KEEP:-0}
PROMPT="a red fox running through fresh snow"
SEED=7
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$WORK"
LOG=$WORK/log
mkdir -p "$LOG"

make_ckpt() {  # name -> folder
  local name=$1 dir=$WORK/ck_$1
  if [ "$KEEP" = 1 ] && [ -f "$dir/model_index.json" ]; then echo "$dir"; return; fi
  local small="--text-layers 1 --vocab-size 1000 --tokenizer-vocab-size 1000"
  case $name in
    tiny) "$MK" --kind t2v-a14b --preset tiny --layers "$LAYERS" --output "$dir" --overwrite ;;
    a14b) "$MK" --kind t2v-a14b --preset full --layers "$LAYERS" $small --output "$dir" --overwrite ;;
    5b)   "$MK" --kind ti2v-5b --preset full --layers "$LAYERS" $small --output "$dir" --overwrite ;;
  esac >"$LOG/make_$name.log" 2>&1 || { echo "make_checkpoint $name failed (see $LOG/make_$name.log)" >&2; return 1; }
  echo "$dir"
}

COMMON=(--prompt "$PROMPT" --seed $SEED --height "$H" --width "$W" --num-frames "$FRAMES"
        --num-inference-steps "$STEPS" --max-sequence-length 16 --dtype "$DTYPE" --device "$DEVICE"
        --crf 0 --overwrite --log-level warn)

gen() {  # tag ckpt extra-args...  -> $WORK/<tag>.{mp4,safetensors,dump,json}
  local tag=$1 ck=$2; shift 2
  "$GEN" --model "$ck" "${COMMON[@]}" --output "$WORK/$tag.mp4" --save-tensors "$WORK/$tag.safetensors" \
    --dump-tensors "$WORK/$tag.dump" --report "$WORK/$tag.json" "$@" >"$LOG/$tag.log" 2>&1
  local rc=$?
  [ $rc = 0 ] || echo "  !! $tag exited $rc (see $LOG/$tag.log): $(grep -v 'negative prompt' "$LOG/$tag.log" | tail -2 | tr '\n' ' ')" >&2
  return $rc
}

cat <<'EOF'
# FP8 weight quality vs bf16 (random-weight checkpoints)

What these numbers show and do not show: the checkpoints are RANDOM weights at full layer widths with few blocks,
not the trained Wan2.2 models. Activations are therefore not the real distribution (no outlier channels, no trained
structure), and a random few-block model is not a trained 40-block model, so these tables bound only what we can
measure here: that each FP8 mode runs, stays finite, and how far per-output-channel float8 rounding moves each
transformer call, the final latents and the decoded frames relative to bf16 weights on the same seed and prompt.
Real quality (FP8 vs bf16 on trained weights, on real prompts) must be checked by users on real weights.
Relative error = ||a - b|| / ||b|| over the whole tensor, b = the bf16 run. PSNR/SSIM: omni-compare on the two
videos (written with --crf 0, so both sides carry the same encoding); "PSNR(float)" is the PSNR of the float
'frames' tensors (no encoding).
EOF
echo
echo "Settings: device $DEVICE, --dtype $DTYPE, ${H}x${W}, $FRAMES frames, $STEPS steps, seed $SEED, --layers $LAYERS, max-sequence-length 16, OMP_NUM_THREADS=$OMP_NUM_THREADS"
T0=$(date +%s)

MODES=("ffn" "ffn --fp8-matmul" "attention" "attention --fp8-matmul" "all" "all --fp8-matmul")
for c in $CKPTS; do
  ck=$(make_ckpt "$c") || continue
  echo
  echo "## checkpoint $c ($ck): $(python3 -c "import json;c=json.load(open('$ck/transformer/config.json'));print('dim %d (%d heads x %d), ffn %d, text_dim %d, %d blocks' % (c['num_attention_heads']*c['attention_head_dim'], c['num_attention_heads'], c['attention_head_dim'], c['ffn_dim'], c['text_dim'], c['num_layers']))")"
  gen "${c}_bf16" "$ck" --weight-dtype auto || { echo "bf16 baseline failed; skipping $c"; continue; }
  rows=()
  if [ "$c" = tiny ]; then MODES_C=("bf16-rerun" "${MODES[@]}"); else MODES_C=("${MODES[@]}"); fi
  for m in "${MODES_C[@]}"; do
    tag="${c}_$(echo "$m" | sed 's/ --fp8-matmul/_mm/')"
    if [ "$m" = bf16-rerun ]; then
      gen "$tag" "$ck" --weight-dtype auto || { rows+=("| $m | FAILED | | | | | |"); continue; }
    else
      # shellcheck disable=SC2086
      gen "$tag" "$ck" --weight-dtype float8_e4m3fn --fp8-layers $m || { rows+=("| $m | FAILED | | | | | |"); continue; }
    fi
    read -r cmax cmean ncalls nonfin < <($PY calls "$WORK/$tag.dump" "$WORK/${c}_bf16.dump")
    lat=$($PY relerr "$WORK/$tag.safetensors" "$WORK/${c}_bf16.safetensors" latents | awk '{print $2, $3}')
    "$CMP" "$WORK/$tag.mp4" "$WORK/${c}_bf16.mp4" --psnr-min 0 --ssim-min 0 >"$LOG/${tag}_cmp.txt" 2>&1
    read -r pss ssim < <($PY compare_parse "$LOG/${tag}_cmp.txt")
    pf=$($PY frames_psnr "$WORK/$tag.safetensors" "$WORK/${c}_bf16.safetensors" | awk '{print $1"/"$2}')
    nf=""; [ "$nonfin" != 0 ] && nf=" ($nonfin calls NON-FINITE)"
    rows+=("| $m | $cmax$nf | $cmean | $lat | $pss | $ssim | $pf |")
  done
  echo
  echo "transformer calls compared: $ncalls (callNN.out in the bf16 dump: one per transformer call)"
  echo
  echo "| mode | max call rel err | mean call rel err | latents rel err | PSNR min/mean (dB) | SSIM min/mean | PSNR(float) min/mean |"
  echo "|---|---|---|---|---|---|---|"
  echo "| bf16 (baseline) | 0 | 0 | 0 | inf | 1 | inf |"
  printf '%s\n' "${rows[@]}"
  echo "(elapsed $(( $(date +%s) - T0 )) s)"
done

if [ -n "$HSDP_CKPT" ]; then
  c=$HSDP_CKPT
  ck=$WORK/ck_$c
  [ -f "$ck/model_index.json" ] || ck=$(make_ckpt "$c")
  echo
  echo "## memory and traffic at HSDP $NP ($c; mpirun -np $NP --use-hsdp --hsdp-shard-size $NP, device $DEVICE)"
  pairs=()
  for m in bf16 ffn all; do
    tag="${c}_hsdp_$m"
    if [ $m = bf16 ]; then wd=(--weight-dtype auto); else wd=(--weight-dtype float8_e4m3fn --fp8-layers $m); fi
    mpirun -np "$NP" --oversubscribe -x OMP_NUM_THREADS "$GEN" --model "$ck" "${COMMON[@]}" \
      --use-hsdp --hsdp-shard-size "$NP" "${wd[@]}" --output "$WORK/$tag.mp4" --save-tensors "$WORK/$tag.safetensors" \
      --report "$WORK/$tag.json" >"$LOG/$tag.log" 2>&1 || echo "  !! $tag failed (see $LOG/$tag.log): $(tail -2 "$LOG/$tag.log" | tr '\n' ' ')"
    pairs+=("$m=$WORK/$tag.json")
  done
  $PY memory "$ck" "${pairs[@]}"
  echo
  echo "Layout independence (HSDP $NP vs the single-rank run of the same mode; latents rel err; 0 = bitwise):"
  for m in bf16 ffn all; do
    if [ -f "$WORK/${c}_hsdp_$m.safetensors" ] && [ -f "$WORK/${c}_$m.safetensors" ]; then
      echo "  $m: $($PY relerr "$WORK/${c}_hsdp_$m.safetensors" "$WORK/${c}_$m.safetensors" latents frames | tr '\n' ' ')"
    else
      echo "  $m: (missing single-rank or HSDP output)"
    fi
  done
fi
echo
echo "total wall time $(( $(date +%s) - T0 )) s"
