#!/usr/bin/env bash
# The main job on the built-in default model: 4 ranks, weights sharded 4 ways with HSDP, one MP4 written.
# The default model is a small random-weight Wan2.2 T2V-A14B-shaped checkpoint that the tool generates on first
# use (into ~/.cache/omni-generate, or $OMNI_CACHE_DIR): its video is noise; it exists to try the tool.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p build/demo
mpirun -q --oversubscribe -np 4 -x OMP_NUM_THREADS=1 build/apps/omni-generate \
  --use-hsdp --hsdp-shard-size 4 --prompt "A cat playing piano" \
  --output build/demo/cat.mp4 --report build/demo/report.json --overwrite "$@"
echo "demo: wrote build/demo/cat.mp4 (report: build/demo/report.json)"
