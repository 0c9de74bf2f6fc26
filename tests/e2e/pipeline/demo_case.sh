#!/usr/bin/env bash
# The README's first command (tools/demo.sh, without its build step): the built-in default model generated on
# first use, run on 4 ranks with HSDP shard 4, one valid MP4 and a report whose figures show the sharding.
#   demo_case.sh SOURCE_DIR GENERATE WORK_DIR
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
src=$1; gen=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
SKIP_BUILD=1 OMNI_GENERATE="$gen" DEMO_DIR="$work" OMNI_CACHE_DIR="$work/cache" bash "$src/tools/demo.sh"
probe=$(ffprobe -v error -select_streams v:0 -count_frames \
        -show_entries stream=codec_name,pix_fmt,width,height,nb_read_frames -of default=nw=1 "$work/cat.mp4")
echo "$probe"
for line in codec_name=h264 pix_fmt=yuv420p width=128 height=128 nb_read_frames=17; do
  grep -qx "$line" <<<"$probe" || fail "ffprobe lacks $line"
done
# The report: 4 ranks, shard 4, and each rank holding about a quarter of the sharded weights.
r="$work/report.json"
grep -q '"world_size": 4' "$r" && grep -q '"hsdp_shard": 4' "$r" || { echo "FAIL: report layout"; cat "$r"; exit 1; }
total=$(grep -o '"param_bytes_total": [0-9]*' "$r" | grep -o '[0-9]*$')
for res in $(grep -o '"param_bytes_resident": [0-9]*' "$r" | grep -o '[0-9]*$'); do
  # The sharded models (everything but the VAE) over 4, plus padding: well under a third of the total.
  [ "$res" -gt 0 ] && [ $((res * 3)) -lt "$total" ] || fail "resident $res of $total"
done
echo "ok: demo wrote a valid video; resident per rank $(grep -o '"param_bytes_resident": [0-9]*' "$r" | head -1) of $total"
