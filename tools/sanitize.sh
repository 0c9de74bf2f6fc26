#!/usr/bin/env bash
# Builds omni-generate and its tests with AddressSanitizer and UndefinedBehaviorSanitizer (cmake
# -DOMNI_SANITIZE=ON) into $BUILD_DIR (build-asan) and runs the unit tests and one multi-rank pipeline case
# under them: any sanitizer report fails the run (halt_on_error). Leak checking is off: MPI and LibTorch keep
# allocations for the process's life by design.
#   tools/sanitize.sh [ctest -R regex]      default: the unit tests and pipeline.t2v.hsdp4
set -euo pipefail
cd "$(dirname "$0")/.."
export BUILD_DIR=${BUILD_DIR:-build-asan}
CMAKE_ARGS="-DOMNI_SANITIZE=ON ${CMAKE_ARGS:-}" bash tools/build.sh
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=1:detect_odr_violation=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The GoogleTest and MPI unit tests (names without a dot) and one pipeline case on 4 ranks (HSDP over all).
tests=${1:-'^[^.]+$|^pipeline\.t2v\.hsdp4$'}
cd "$BUILD_DIR"
ctest -LE 'gpu|slurm' -R "$tests" --output-on-failure -j "${JOBS:-2}"
