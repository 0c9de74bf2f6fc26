#!/usr/bin/env bash
# Memory of LoRA merging under HSDP: a checkpoint with the A14B expert's full widths (dim 5120, 40 heads x 128,
# FFN 13824; --layers blocks, default 2, so that it fits a small machine: fewer blocks make the LoRA's share of
# the peak larger, not smaller) and a rank-64 LoRA on every attention and feed-forward projection of
# `transformer` (random bfloat16 weights, tools/lora/make_lora.py), run on 4 ranks with --use-hsdp
# --hsdp-shard-size 4 with and without the LoRA. Prints each rank's peak RSS at the end of load and over the
# whole run (from --report), and the ratio with / without. Target: within 5%.
#   tools/bench/lora_memory.sh [BUILD_DIR] [--layers N] [--device cpu|cuda]
# Needs tools/reference/setup.sh's environment (PyTorch, safetensors) for make_lora.py, ~6 GB of disk and RAM.
set -euo pipefail
build=${1:-build}; shift || true
layers=2; device=cpu
while [ $# -gt 0 ]; do
  case $1 in --layers) layers=$2; shift 2 ;; --device) device=$2; shift 2 ;; *) echo "unknown: $1" >&2; exit 2 ;; esac
done
here=$(cd "$(dirname "$0")/../.." && pwd)
py=${REFERENCE_VENV:-$here/tools/reference/.venv}/bin/python
gen=$build/apps/omni-generate
work=${WORK:-$(mktemp -d)}; [ -n "${WORK:-}" ] || trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

model=$work/a14b-wide-$layers
if [ ! -d "$model" ]; then
  # The full preset's transformer widths; a small text encoder with the full text_dim (4096), the tiny VAE.
  "$build/tools/make_checkpoint/omni-make-checkpoint" --kind t2v-a14b --preset full --layers "$layers" \
    --text-layers 1 --vocab-size 4096 --tokenizer-vocab-size 512 --vae-base-dim 8 --output "$model" >/dev/null
fi
"$py" "$here/tools/lora/make_lora.py" --transformer "$model/transformer" --rank 64 --targets attn,ffn \
  --dtype bfloat16 --std-up 0.01 --seed 7 --out "$work/lora-r64.safetensors" 2>/dev/null
echo "checkpoint: $(du -sh "$model" | cut -f1) ($layers blocks per expert at full width); LoRA rank 64: $(du -h "$work/lora-r64.safetensors" | cut -f1)"

run() {  # run TAG [flags...]
  local tag=$1; shift
  mpirun -q --oversubscribe --allow-run-as-root -np 4 -x OMP_NUM_THREADS=1 "$gen" --model "$model" \
    --prompt "a bench" --height 32 --width 32 --num-frames 5 --num-inference-steps 1 --max-sequence-length 8 \
    --dtype bfloat16 --device "$device" --use-hsdp --hsdp-shard-size 4 --log-level error --overwrite \
    --output "$work/$tag.mp4" --report "$work/$tag.json" "$@"
}
run plain
run lora --lora "$work/lora-r64.safetensors:1.0"
python3 - "$work/plain.json" "$work/lora.json" <<'PY'
import json, sys
plain, lora = (json.load(open(p)) for p in sys.argv[1:3])
key = "load_peak_device_bytes" if plain["device"].startswith("cuda") else "load_peak_rss_bytes"
run_key = "peak_device_bytes" if plain["device"].startswith("cuda") else "peak_rss_bytes"
print(f"{'rank':>4} {'load peak, no LoRA':>19} {'with LoRA':>12} {'ratio':>7}   {'run peak, no LoRA':>18} {'with LoRA':>12} {'ratio':>7}")
worst = 0.0
for a, b in zip(plain["ranks"], lora["ranks"]):
    r1, r2 = b[key] / a[key], b[run_key] / a[run_key]
    worst = max(worst, r1, r2)
    print(f"{a['rank']:>4} {a[key] / 2**20:>15.0f} MiB {b[key] / 2**20:>8.0f} MiB {r1:>7.3f}   "
          f"{a[run_key] / 2**20:>14.0f} MiB {b[run_key] / 2**20:>8.0f} MiB {r2:>7.3f}")
print(f"resident weights per rank: {plain['ranks'][0]['param_bytes_resident'] / 2**20:.0f} MiB; "
      f"worst ratio {worst:.3f} (target <= 1.05); load {plain['timings']['load']:.1f} s without, "
      f"{lora['timings']['load']:.1f} s with the LoRA")
PY
