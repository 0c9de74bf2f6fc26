#!/usr/bin/env bash
# The memory plan across a grid (issue 44, part 5): every rank's planned peak (the report's planned_peak_bytes,
# made before any weight is read) against its measured peak above the process's baseline (peak_rss_bytes -
# baseline_rss_bytes on the CPU; cuda_peak_allocated_bytes on a GPU), and the encode-and-denoise window alone
# (planned_phases' denoise against denoise_peak_bytes), one table row per case and rank. Target: within 15%.
# The grid (random-weight checkpoints with the published widths, 3 (TI2V-5B) or 2 (A14B) transformer blocks,
# 2 text blocks, a 32k vocabulary; the VAEs at their published sizes):
#   models   TI2V-5B (3072 wide, Wan2.2's VAE) and T2V-A14B (5120 wide, Wan2.1's VAE)
#   sizes    256x256 to 720x400, 9 to 33 frames
#   dtypes   float32 and bfloat16
#   ranks    one, and two (ulysses 2 or cfg 2, HSDP shard 2) with and without --vae-parallel
#   options  --step-cache fbcache, --weight-dtype float8_e4m3fn
#   tools/bench/memory_grid.sh [BUILD_DIR]    (WORK keeps the checkpoints, ~10 GB; CASES=regex runs some rows;
#                                             DEVICE=cuda on a GPU machine). On a 2-core CPU a float32
#                                             TI2V-5B row takes about 5 minutes (mostly the load): the
#                                             whole grid about an hour.
set -euo pipefail
build=${1:-build}
gen=$build/apps/omni-generate
make=$build/tools/make_checkpoint/omni-make-checkpoint
device=${DEVICE:-cpu}
work=${WORK:-$(mktemp -d)}; [ -n "${WORK:-}" ] || trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpi() { local np=$1; shift; mpirun -q --oversubscribe --allow-run-as-root -np "$np" -x OMP_NUM_THREADS=1 "$@"; }

small_text=(--text-layers 2 --vocab-size 32128)
# TI2V-5B with 3 blocks: one in the middle, which float8 holds (the first and last stay in the run dtype).
[ -d "$work/ti2v" ] || "$make" --kind ti2v-5b --preset full --layers 3 "${small_text[@]}" --output "$work/ti2v" >/dev/null
[ -d "$work/a14b" ] || "$make" --kind t2v-a14b --preset full --layers 2 "${small_text[@]}" --output "$work/a14b" >/dev/null

status=0
printf '%-44s %4s  %-12s %10s %10s %6s  %10s %10s %6s\n' case rank phase "plan MiB" "meas MiB" ratio \
  "loop plan" "loop meas" ratio
grid_case() {  # NAME NP FLAGS...
  local name=$1 np=$2; shift 2
  [[ "$name" =~ ${CASES:-.} ]] || return 0
  rm -f "$work/case.json" "$work/case.mp4"
  mpi "$np" "$gen" --device "$device" --num-inference-steps 2 --prompt "A fox in the snow" --output "$work/case.mp4" \
    --report "$work/case.json" --overwrite "$@" 2>"$work/case.log" || { tail -3 "$work/case.log"; status=1; return; }
  python3 - "$work/case.json" "$name" <<'EOF' || status=1
import json, sys
r = json.load(open(sys.argv[1])); name = sys.argv[2]; bad = False
for k in r["ranks"]:
    cuda = "cuda_peak_allocated_bytes" in k
    measured = k["cuda_peak_allocated_bytes"] if cuda else k["peak_rss_bytes"] - k["baseline_rss_bytes"]
    ratio = k["planned_peak_bytes"] / measured
    # The loop's window: the plan's denoise phase against the peak from the text encoding to the loop's end
    # (on the CPU above the baseline).
    phases = k["planned_phases"]
    loop_plan = max(phases[p]["bytes"] for p in ("text_encode", "clip_encode", "denoise") if p in phases)
    loop = k["denoise_peak_bytes"] - (0 if cuda else k["baseline_rss_bytes"])
    lratio = loop_plan / loop
    ok = 0.85 <= ratio <= 1.15 and 0.85 <= lratio <= 1.15
    bad |= not ok
    print("%-44s %4d  %-12s %10.0f %10.0f %6.3f  %10.0f %10.0f %6.3f%s" % (name, k["rank"], k["planned_peak_phase"],
          k["planned_peak_bytes"] / 2**20, measured / 2**20, ratio, loop_plan / 2**20, loop / 2**20, lratio,
          "" if ok else "  OUTSIDE 15%"))
sys.exit(1 if bad else 0)
EOF
}

ti2v=(--model "$work/ti2v")
a14b=(--model "$work/a14b")
for dtype in float32 bfloat16; do
  grid_case "ti2v $dtype 256x256x9 1 rank" 1 "${ti2v[@]}" --dtype "$dtype" --height 256 --width 256 --num-frames 9
  grid_case "ti2v $dtype 512x512x17 1 rank" 1 "${ti2v[@]}" --dtype "$dtype" --height 512 --width 512 --num-frames 17
  grid_case "ti2v $dtype 512x512x17 ulysses 2 shard 2" 2 "${ti2v[@]}" --dtype "$dtype" --height 512 --width 512 \
    --num-frames 17 --ulysses-degree 2 --use-hsdp --hsdp-shard-size 2 --no-vae-parallel
  grid_case "ti2v $dtype 512x512x17 ulysses 2 vae-parallel" 2 "${ti2v[@]}" --dtype "$dtype" --height 512 \
    --width 512 --num-frames 17 --ulysses-degree 2 --use-hsdp --hsdp-shard-size 2 --vae-parallel
  grid_case "a14b $dtype 256x256x9 cfg 2 shard 2" 2 "${a14b[@]}" --dtype "$dtype" --height 256 --width 256 \
    --num-frames 9 --cfg-parallel-size 2 --use-hsdp --hsdp-shard-size 2
done
grid_case "ti2v bfloat16 720x400x33 1 rank" 1 "${ti2v[@]}" --dtype bfloat16 --height 400 --width 720 --num-frames 33
grid_case "ti2v bfloat16 512x512x17 fbcache" 1 "${ti2v[@]}" --dtype bfloat16 --height 512 --width 512 \
  --num-frames 17 --step-cache fbcache
grid_case "ti2v bfloat16 512x512x17 float8" 1 "${ti2v[@]}" --dtype bfloat16 --height 512 --width 512 \
  --num-frames 17 --weight-dtype float8_e4m3fn --fp8-layers all
[ "$status" = 0 ] && echo "all within 15%" || echo "SOME OUTSIDE 15%"
exit "$status"
