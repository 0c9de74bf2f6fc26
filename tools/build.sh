#!/usr/bin/env bash
# Configures and builds omni-generate into ./build (Release, Ninja, ccache when present): everything, or the
# targets named in $BUILD_TARGETS.
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
# LibTorch comes from the torch in $OMNI_VENV (default .venv, made by tools/install-deps.sh) unless
# CMAKE_ARGS names another (-DCMAKE_PREFIX_PATH=...).
VENV=${OMNI_VENV:-.venv}
# A first build writes about 3.4 GB (objects, binaries, the test fixtures it generates).
[ -d "$BUILD_DIR" ] || bash tools/free-space.sh "$BUILD_DIR" 4 "a first build into $BUILD_DIR"
cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=Release -DOMNI_TORCH_PYTHON="$(realpath -m "$VENV")/bin/python3" \
  ${CMAKE_ARGS:-}
# BUILD_TARGETS: only these targets (the demo builds omni-generate alone, not the tests and benchmarks).
# shellcheck disable=SC2086
cmake --build "$BUILD_DIR" -j "$JOBS" ${BUILD_TARGETS:+--target $BUILD_TARGETS}
