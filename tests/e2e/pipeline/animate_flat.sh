#!/usr/bin/env bash
# Wan2.2-Animate's memory does not grow with the video's length: a 38-frame performance (5 segments of 9) peaks
# within 10% of a 14-frame one (2 segments), on the GPU by CUDA's peak allocated bytes (the report's
# peak_device_bytes: deterministic). On the CPU resident memory moves by 25% between runs of the same video
# (the heap's state), so this runs as the gpu-labelled test (tools/gpu/check.sh); the CPU checks that nothing
# is kept per segment through the resume and parity tests.
#   animate_flat.sh GENERATE REFERENCE_DIR WORK_DIR   (DEVICE=cuda)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; ref=$2; work=$3
device=${DEVICE:-cuda}
rm -rf "$work"; mkdir -p "$work"
seg=$ref/animate-segments
ffmpeg -v error -y -stream_loop 2 -i "$seg/pose.mp4" -frames:v 38 -c:v libx264 -pix_fmt yuv420p "$work/pose38.mp4"
ffmpeg -v error -y -stream_loop 2 -i "$seg/face.mp4" -frames:v 38 -c:v libx264 -pix_fmt yuv420p "$work/face38.mp4"
flat=(--model "$ref/animate-tiny/model" --device "$device" --dtype float32 --image "$seg/ref.jpg" --prompt x
      --height 256 --width 256 --segment-frames 9 --num-inference-steps 2 --max-sequence-length 32 --log-level warn)
"$gen" "${flat[@]}" --pose-video "$seg/pose.mp4" --face-video "$seg/face.mp4" --output "$work/short.mp4" \
  --report "$work/short.json"
"$gen" "${flat[@]}" --pose-video "$work/pose38.mp4" --face-video "$work/face38.mp4" --output "$work/long.mp4" \
  --report "$work/long.json"
python3 - "$work/short.json" "$work/long.json" "$device" <<'PY' || fail "the long run's peak grew"
import json, sys
key = "peak_device_bytes" if sys.argv[3].startswith("cuda") else "peak_rss_bytes"
def peak(path):
    r = json.load(open(path))["ranks"][0]
    return r[key] - (0 if key == "peak_device_bytes" else r["baseline_rss_bytes"])
short, long = peak(sys.argv[1]), peak(sys.argv[2])
print(f"{key}: 2 segments {short / 2**20:.1f} MiB, 5 segments {long / 2**20:.1f} MiB")
sys.exit(not long <= 1.10 * short)
PY
pass "a 5-segment video peaks within 10% of a 2-segment one ($device)"
summary
