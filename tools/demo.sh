#!/usr/bin/env bash
# The main job on the built-in default model: 4 ranks, weights sharded 4 ways with HSDP, one MP4 written.
# The default model is a small random-weight Wan2.2 T2V-A14B-shaped checkpoint that the tool generates on first
# use (into ~/.cache/omni-generate, or $OMNI_CACHE_DIR): its video is noise; it exists to try the tool.
# Environment: SKIP_BUILD=1 uses an existing build; OMNI_GENERATE the binary; DEMO_DIR where the outputs go.
set -euo pipefail
cd "$(dirname "$0")/.."
# omni-generate alone: a newcomer's first command need not build the tests and benchmarks.
if [ "${SKIP_BUILD:-0}" != 1 ]; then BUILD_TARGETS=omni-generate bash tools/build.sh; fi
GEN=${OMNI_GENERATE:-build/apps/omni-generate}
OUT=${DEMO_DIR:-build/demo}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p "$OUT"
mpirun -q --oversubscribe -np 4 -x OMP_NUM_THREADS=1 ${OMNI_CACHE_DIR:+-x OMNI_CACHE_DIR} "$GEN" \
  --use-hsdp --hsdp-shard-size 4 --prompt "A cat playing piano" \
  --output "$OUT/cat.mp4" --report "$OUT/report.json" --overwrite "$@"
echo "demo: wrote $OUT/cat.mp4 (report: $OUT/report.json)"
