#!/usr/bin/env bash
# --layout auto against the plain data-parallel layout (issue 14): 1, 2, 3 and 8 prompts on 4 ranks with
# --use-hsdp --hsdp-shard-size 4 on the built-in default model (or MODEL), each run with --layout auto and with
# --layout manual (dp 4); prints the layout each chose and the wall time of the whole command. On a 2-core
# machine 4 CPU ranks share 2 cores: the automatic layout can gain at most 2x there; on 4 GPUs the same command
# measures the real gain.
#   tools/bench/auto_layout.sh [BUILD_DIR]    (DEVICE=cuda on a GPU machine; FLAGS overrides the video size)
set -euo pipefail
build=${1:-build}
gen=$build/apps/omni-generate
work=${WORK:-$(mktemp -d)}; [ -n "${WORK:-}" ] || trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
read -r -a flags <<<"${FLAGS:---height 256 --width 256 --num-frames 17 --num-inference-steps 8}"
model=(); [ -n "${MODEL:-}" ] && model=(--model "$MODEL")
run() {  # PROMPTS LAYOUT -> "layout seconds"
  local n=$1 mode=$2 out=$work/$1-$2
  rm -rf "$out"; mkdir -p "$out"
  for i in $(seq 1 "$n"); do echo "A cat playing piano, take $i"; done >"$out/prompts.txt"
  local start; start=$(date +%s.%N)
  mpirun -q --oversubscribe --allow-run-as-root -np 4 -x OMP_NUM_THREADS=1 "$gen" "${model[@]}" \
    --device "${DEVICE:-cpu}" --use-hsdp --hsdp-shard-size 4 --layout "$mode" --prompts-file "$out/prompts.txt" \
    "${flags[@]}" --output "$out/v.mp4" --report "$out/r.json" 2>"$out/log" >/dev/null
  local end; end=$(date +%s.%N)
  python3 -c "import json,sys; l=json.load(open(sys.argv[1]))['layout']; print('dp %d x cfg %d x ring %d x ulysses %d' % (l['dp'], l['cfg'], l['ring'], l['ulysses']))" "$out/r.json" | tr -d '\n'
  python3 -c "import sys; print('|%.1f' % (float(sys.argv[2]) - float(sys.argv[1])))" "$start" "$end"
}
"$gen" "${model[@]}" --prompt warm-up --dry-run >/dev/null 2>&1 || true  # the default model, generated once
printf '%-8s | %-34s | %8s | %-34s | %8s | %s\n' prompts "auto layout" "auto s" "manual layout" "dp s" "speed-up"
for n in 1 2 3 8; do
  IFS='|' read -r la ta <<<"$(run "$n" auto)"
  IFS='|' read -r lm tm <<<"$(run "$n" manual)"
  printf '%-8s | %-34s | %8s | %-34s | %8s | %.2fx\n' "$n" "$la" "$ta" "$lm" "$tm" "$(python3 -c "print($tm / $ta)")"
done
