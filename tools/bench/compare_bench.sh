#!/usr/bin/env bash
# omni-compare on two runs of 100 tiny videos (128x128, 17 frames, the size of the built-in default model's),
# each with a sidecar: B encoded at crf 18, A the same frames at crf 23. Prints the wall time of a comparison
# with the report, JSON and JUnit, at the default jobs and at --jobs 1. Target (issue 45): under a minute here.
#   tools/bench/compare_bench.sh [BUILD_DIR] [N]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-$root/build}
n=${2:-100}
cmp=$build/apps/omni-compare/omni-compare
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/a" "$work/b"
for ((i = 0; i < n; i++)); do
  name=$(printf 'video-%04d.mp4' "$i")
  # A moving test pattern with noise of its own seed per video, as random-weight outputs look.
  ffmpeg -v error -y -f lavfi -i "testsrc2=size=128x128:rate=8,noise=alls=30:allf=t+u:all_seed=$i" -frames:v 17 \
    -c:v libx264 -crf 18 -pix_fmt yuv420p "$work/b/$name"
  ffmpeg -v error -y -i "$work/b/$name" -c:v libx264 -crf 23 -pix_fmt yuv420p "$work/a/$name"
  for run in a b; do
    printf '{"output": "%s", "prompt": "video %d", "frames": 17, "height": 128, "width": 128, "settings": {"seed": %d, "crf": %s}}\n' \
      "$name" "$i" "$i" "$([ $run = a ] && echo 23 || echo 18)" > "$work/$run/$name.json"
  done
done
for jobs in 0 1; do
  rm -rf "$work/report" "$work/r.json" "$work/r.xml"
  start=$(date +%s.%N)
  "$cmp" "$work/a" "$work/b" --jobs "$jobs" --report "$work/report" --json "$work/r.json" --junit "$work/r.xml" \
    > "$work/out.txt" 2>&1 || true
  end=$(date +%s.%N)
  tail -1 "$work/out.txt" | grep -q "^report:" || { cat "$work/out.txt"; exit 1; }
  printf 'compare_bench: %d pairs of 128x128x17 (report, JSON, JUnit), --jobs %s: %.1f s (%s)\n' "$n" \
    "$([ "$jobs" = 0 ] && echo "default ($(nproc) cores)" || echo "$jobs")" "$(echo "$end - $start" | bc)" \
    "$(grep -E '^(PASS|FAIL):' "$work/out.txt")"
done
