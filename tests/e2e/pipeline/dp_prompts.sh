#!/usr/bin/env bash
# A prompt list over data-parallel groups: 3 prompts on 4 ranks as dp 2 x ulysses 2 with HSDP over all 4 ranks
# (one shard group spanning both dp groups, so the group with fewer prompts must repeat one to keep the gathers
# in step). Every prompt's video is written once, under its index, and equals the one-rank run of that prompt.
#   dp_prompts.sh GENERATE COMPARE MODEL_DIR WORK_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; compare=$2; model=$3; work=$4
rm -rf "$work"; mkdir -p "$work"
common=(--model "$model" --height 32 --width 48 --num-frames 9 --num-inference-steps 3 --max-sequence-length 24
        --dtype float32 --seed 5 --log-level warn)
printf '# three prompts\nA red fox in the snow\n\nA boat on a lake\nA city at night\n' > "$work/prompts.txt"
mpi 4 "$gen" "${common[@]}" \
  --prompts-file "$work/prompts.txt" --ulysses-degree 2 --use-hsdp --hsdp-shard-size 4 \
  --output "$work/dp.mp4" --save-tensors "$work/dp.safetensors" --report "$work/report.json"
for i in 0000 0001 0002; do
  test -f "$work/dp-$i.mp4" && test -f "$work/dp-$i.mp4.json" && test -f "$work/dp-$i.safetensors" ||
    { echo "FAIL: outputs of prompt $i missing"; ls -la "$work"; exit 1; }
done
if ls "$work"/dp-0003* >/dev/null 2>&1; then fail "the repeat run wrote an output"; fi
grep -q '"dp-0002.mp4"\|dp-0002.mp4' "$work/report.json" || fail "report lacks the outputs"
# Prompt 2 ran on dp group 0 in its second round; prompt 1 on group 1 in its first.
for i in 1 2; do
  prompt=$(sed -n "$((i == 1 ? 4 : 5))p" "$work/prompts.txt")
  "$gen" "${common[@]}" --prompt "$prompt" --output "$work/one-$i.mp4" --save-tensors "$work/one-$i.safetensors"
  "$compare" "$work/dp-000$i.safetensors" "$work/one-$i.safetensors" --keys prompt_embeds,frames,latents --tolerance 1e-5
done
echo "ok: 3 prompts over dp 2"
