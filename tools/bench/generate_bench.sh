#!/usr/bin/env bash
# End-to-end generation under several parallel layouts on one model: denoising time, per-rank resident weights,
# bytes gathered per step and peak RSS, from each run's --report. Every layout must give the same video (the
# script checks the final latents against the one-rank run).
#   tools/bench/generate_bench.sh [BUILD_DIR] [omni-generate flags, e.g. --model DIR]
# Default: the built-in default model (8 heads), its preset sizes (128x128, 17 frames, 8 steps), float32.
set -euo pipefail
build=${1:-build}; shift || true
gen=$build/apps/omni-generate; cmp=$build/apps/omni-compare/omni-compare
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
layouts=("1|"
         "4|--use-hsdp --hsdp-shard-size 4 --ulysses-degree 4"
         "4|--use-hsdp --cfg-parallel-size 2 --ulysses-degree 2"
         "4|--use-hsdp --ring-degree 4"
         "4|--ulysses-degree 4")
printf '%-58s %4s %9s %9s %12s %12s %11s %7s\n' layout np total_s denoise_s resident_B gathered/step peak_rss_MiB max_diff
for entry in "${layouts[@]}"; do
  np=${entry%%|*}; flags=${entry#*|}; tag=$(echo "np$np $flags" | tr -c 'a-z0-9' _)
  # shellcheck disable=SC2086
  mpirun -q --oversubscribe --allow-run-as-root -np "$np" -x OMP_NUM_THREADS=1 ${OMNI_CACHE_DIR:+-x OMNI_CACHE_DIR} \
    "$gen" --prompt "A cat playing piano" --dtype float32 --output "$work/$tag.mp4" --report "$work/$tag.json" \
    --save-tensors "$work/$tag.safetensors" --log-level error $flags "$@"
  r="$work/$tag.json"
  num() { grep -o "\"$1\": [0-9.e+-]*" "$r" | head -1 | grep -o '[0-9.e+-]*$'; }
  rss=$(grep -o '"peak_rss_bytes": [0-9]*' "$r" | grep -o '[0-9]*$' | sort -n | tail -1)
  if [ -z "${ref:-}" ]; then ref="$work/$tag.safetensors"; diff=0; else
    diff=$("$cmp" "$work/$tag.safetensors" "$ref" --keys latents --tolerance 1e-3 | awk '$1 == "latents" {print $4}'); fi
  printf '%-58s %4s %9.2f %9.2f %12s %12s %11d %7s\n' "${flags:-(one rank)}" "$np" "$(num total)" "$(num denoise)" \
    "$(num param_bytes_resident)" "$(num gathered_bytes_per_step)" $((rss / 1048576)) "$diff"
done
