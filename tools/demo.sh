#!/usr/bin/env bash
# The main job on the built-in default model: 4 ranks, weights sharded 4 ways with HSDP.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/build.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mpirun -q --oversubscribe -np 4 -x OMP_NUM_THREADS=1 build/apps/omni-generate \
  --use-hsdp --hsdp-shard-size 4 --dry-run "$@"
