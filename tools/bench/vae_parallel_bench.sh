#!/usr/bin/env bash
# Patch-parallel VAE decode: per-rank decode peak (report: vae_peak_bytes) and decode seconds of a full-width
# Wan2.1 VAE (base 96, multipliers 1,2,4,4, 2 residual blocks: Wan2.2 A14B's) at 480p, decoded by one rank and by
# the 4 ranks of one data-parallel group (cfg 2 x ulysses 2, --vae-parallel), on a checkpoint whose transformer
# and text encoder are tiny (they only have to make latents). Checks that both decodes give the same frames.
# Target: every rank's peak at 4 ranks at most 35% of the one-rank decode's.
#   tools/bench/vae_parallel_bench.sh [BUILD_DIR] [--frames N] [--device cpu|cuda]
# On the CPU the peak is the growth of resident memory during the decode (core/memory.h); on a GPU the caching
# allocator's peak above what was allocated before it.
set -euo pipefail
build=${1:-build}; shift || true
frames=5; device=cpu
while [ $# -gt 0 ]; do
  case $1 in --frames) frames=$2; shift 2 ;; --device) device=$2; shift 2 ;; *) echo "unknown: $1" >&2; exit 2 ;; esac
done
gen=$build/apps/omni-generate; cmp=$build/apps/omni-compare/omni-compare
work=${WORK:-$(mktemp -d)}; [ -n "${WORK:-}" ] || trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
model=$work/vae96
[ -d "$model" ] || "$build/tools/make_checkpoint/omni-make-checkpoint" --kind t2v-a14b --preset tiny \
  --vae-base-dim 96 --vae-res-blocks 2 --output "$model" >/dev/null
common=(--model "$model" --prompt "a bench" --height 480 --width 832 --num-frames "$frames" --num-inference-steps 1
        --guidance-scale 4 --max-sequence-length 8 --dtype float32 --vae-dtype float32 --device "$device"
        --log-level error --overwrite)
mpirun -q --oversubscribe --allow-run-as-root -np 1 -x OMP_NUM_THREADS=2 "$gen" "${common[@]}" \
  --output "$work/one.mp4" --save-tensors "$work/one.safetensors" --report "$work/one.json"
mpirun -q --oversubscribe --allow-run-as-root -np 4 -x OMP_NUM_THREADS=1 "$gen" "${common[@]}" \
  --cfg-parallel-size 2 --ulysses-degree 2 --vae-parallel \
  --output "$work/four.mp4" --save-tensors "$work/four.safetensors" --report "$work/four.json"
diff=$("$cmp" "$work/four.safetensors" "$work/one.safetensors" --keys frames --tolerance 1e-5 | awk '$1 == "frames" {print $4}')
python3 - "$work/one.json" "$work/four.json" "$diff" "$frames" <<'PY'
import json, sys
one, four = (json.load(open(p)) for p in sys.argv[1:3])
base = one["ranks"][0]["vae_peak_bytes"]
print(f"480p x {sys.argv[4]} frames, full-width Wan2.1 VAE, device {one['device']}")
print(f"one rank: decode peak {base / 2**20:.0f} MiB, {one['ranks'][0]['decode_seconds']:.2f} s")
worst = 0
for r in four["ranks"]:
    worst = max(worst, r["vae_peak_bytes"] / base)
    print(f"4 ranks, rank {r['rank']}: decode peak {r['vae_peak_bytes'] / 2**20:.0f} MiB "
          f"({100 * r['vae_peak_bytes'] / base:.0f}%), {r['decode_seconds']:.2f} s")
print(f"worst rank at 4: {100 * worst:.0f}% of one rank's (target <= 35%); frames max abs difference {sys.argv[3]}")
PY
