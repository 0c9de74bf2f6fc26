#!/usr/bin/env bash
# The denoising loop never waits for the device (issue 38): OMNI_COUNT_HOST_READS counts the host's reads of
# device data per denoising step (dist/host_reads.h: scalar reads and blocking copies between host and device;
# on the CPU, by intent: every scalar read and every conversion to the CPU) and the report carries them.
#   - T2V, I2V, TI2V text mode and TI2V image mode (per-token timesteps) without a step cache: 0 in every step;
#   - with a step cache (fbcache, teacache) on TI2V image mode: its documented count, one read in each step that
#     may skip (not the first, not the last), on one rank and, on the CPU, on ulysses 2 x cfg 2 with HSDP (the
#     ranks' decisions agreed in the same read);
#   - a run without OMNI_COUNT_HOST_READS reports nothing (counting is off).
# DEVICE=cuda (the gpu-labelled test) runs the one-rank cases on the GPU, where the counts are real transfers.
#   host_reads.sh GENERATE REFERENCE_DIR WORK_DIR
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; ref=$2; work=$3
device=${DEVICE:-cpu}
rm -rf "$work"; mkdir -p "$work"
steps=6
common=(--num-inference-steps $steps --dtype float32 --device "$device" --max-sequence-length 16 --prompt "A fox"
        --negative-prompt "blurry" --seed 5)
t2v=(--model "$ref/t2v-a14b-tiny/model" --height 32 --width 48 --num-frames 5 --guidance-scale 4)
i2v=(--model "$ref/i2v-a14b-tiny/model" --image "$ref/i2v-a14b-tiny/image.png" --height 32 --width 48 --num-frames 5
     --guidance-scale 4)
ti2v=(--model "$ref/ti2v-5b-tiny/model" --height 64 --width 32 --num-frames 9 --guidance-scale 5)
image=(--image "$ref/ti2v-5b-tiny-image/image.png")

# reads REPORT: each rank's "denoise max_per_step" (host reads in all, the most in one step), or "none".
reads() {
  python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(" ".join("%d:%d" % (x["host_reads"]["denoise"], x["host_reads"]["max_per_step"]) if "host_reads" in x else "none"
               for x in r["ranks"]))' "$1"
}

# check NAME NP WANT FLAGS...: the run on NP ranks reports WANT ("denoise:max_per_step" on every rank).
check() {
  local name=$1 np=$2 want=$3; shift 3
  if ! OMNI_COUNT_HOST_READS=1 launch "$np" -x OMNI_COUNT_HOST_READS "$gen" "${common[@]}" "$@" \
      --output "$work/$name.mp4" --report "$work/$name.json" >"$work/$name.log" 2>&1; then
    tail -5 "$work/$name.log"; flunk "$name: the run failed"; return
  fi
  local got expected
  got=$(reads "$work/$name.json")
  expected=$(for _ in $(seq "$np"); do printf '%s ' "$want"; done | sed 's/ $//')
  if [ "$got" = "$expected" ]; then pass "$name: host reads per rank $got (denoise:max per step)"
  else flunk "$name: host reads per rank $got, want $expected"; fi
}
# launch runs one rank directly: -x VAR is mpirun's, so a one-rank launch drops it.
launch() {
  local np=$1; shift
  if [ "$np" -gt 1 ]; then mpi "$np" "$@"; else shift 2; "$@"; fi
}

check t2v 1 0:0 "${t2v[@]}"
check i2v 1 0:0 "${i2v[@]}"
check ti2v-text 1 0:0 "${ti2v[@]}"
check ti2v-image 1 0:0 "${ti2v[@]}" "${image[@]}"
# One read in each step that may skip: steps 1 .. steps-2.
may_skip=$((steps - 2))
for mode in "fbcache 0.3" "teacache 0.5"; do
  set -- $mode
  check "ti2v-image-$1" 1 "$may_skip:1" "${ti2v[@]}" "${image[@]}" --step-cache "$1" --step-cache-threshold "$2"
  if [ "$device" = cpu ]; then
    check "ti2v-image-$1-u2c2" 4 "$may_skip:1" "${ti2v[@]}" "${image[@]}" --step-cache "$1" \
      --step-cache-threshold "$2" --ulysses-degree 2 --cfg-parallel-size 2 --use-hsdp
  fi
done
if [ "$device" = cpu ]; then
  check ti2v-image-u2c2 4 0:0 "${ti2v[@]}" "${image[@]}" --ulysses-degree 2 --cfg-parallel-size 2 --use-hsdp
fi

# Off unless asked: no "host_reads" in the report.
"$gen" "${common[@]}" "${ti2v[@]}" --output "$work/off.mp4" --report "$work/off.json" >/dev/null 2>&1
if [ "$(reads "$work/off.json")" = none ]; then pass "without OMNI_COUNT_HOST_READS nothing is counted"
else flunk "counted without OMNI_COUNT_HOST_READS: $(reads "$work/off.json")"; fi
summary
