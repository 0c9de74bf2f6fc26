#!/usr/bin/env bash
# The golden-set workflow: a JSON Lines list of videos (prompt, seed, image, ... per line) run once as the
# reference, then every new model, LoRA, layout or build run on the same list and compared with it.
#
#   tools/regression/golden.sh make  LIST.jsonl GOLDEN_DIR        [omni-generate flags...]
#   tools/regression/golden.sh check LIST.jsonl GOLDEN_DIR NEW_DIR [omni-generate flags...]
#
# make: runs LIST into GOLDEN_DIR (video-0000.mp4, ... with their sidecars and --save-tensors files, a copy of
# the list). check: runs LIST the same way into NEW_DIR, then `omni-compare NEW_DIR GOLDEN_DIR` with an HTML
# report (NEW_DIR/report/index.html), JSON (NEW_DIR/compare.json) and JUnit XML (NEW_DIR/junit.xml, for the CI
# system's test view); exits with omni-compare's code (0 all pass, 1 a regression, 2 usage, 3 unreadable input).
# Lines without "output" are numbered by position; when the list changes, omni-compare pairs the videos by
# prompt and seed (docs/comparisons.md). A list whose lines name their outputs is run from inside the folder,
# so those names land in it.
#
# Environment: LAUNCH (how omni-generate starts, e.g. "mpirun -np 4" or "srun"; default: one process),
# OMNI_GENERATE, OMNI_COMPARE (the binaries; default: on PATH, else build/apps/...), COMPARE_FLAGS (e.g. "--profile layout
# --lpips-weights lpips.safetensors").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
usage="usage: golden.sh make LIST.jsonl GOLDEN_DIR [flags...] | golden.sh check LIST.jsonl GOLDEN_DIR NEW_DIR [flags...]"
mode=${1:?$usage}
list=${2:?$usage}
golden=${3:?$usage}
shift 3
case $mode in
  make) out=$golden ;;
  check) out=${1:?$usage}; shift ;;
  *) echo "golden.sh: unknown mode '$mode'; $usage" >&2; exit 2 ;;
esac
[ -f "$list" ] || { echo "golden.sh: no list '$list'" >&2; exit 3; }
[ "$mode" = make ] || [ -d "$golden" ] || { echo "golden.sh: no golden run '$golden' (make it first)" >&2; exit 3; }
# The binaries: as given, else on PATH (an installed build), else this checkout's build.
gen=${OMNI_GENERATE:-$(command -v omni-generate || echo "$root/build/apps/omni-generate")}
cmp=${OMNI_COMPARE:-$(command -v omni-compare || echo "$root/build/apps/omni-compare/omni-compare")}
abs() { (cd "$(dirname "$1")" && echo "$PWD/$(basename "$1")"); }
tool() { if [[ $1 == */* ]]; then abs "$1"; else command -v "$1"; fi; }  # a path, or a command on PATH
gen=$(tool "$gen") cmp=$(tool "$cmp") list=$(abs "$list")
mkdir -p "$out"
out=$(abs "$out") golden=$(abs "$golden")
cp "$list" "$out/list.jsonl"
# From inside the run's folder: lines that name their outputs write there too. A rerun of a killed job makes
# only the videos still missing (omni-generate resumes a list).
# shellcheck disable=SC2086 # LAUNCH is a command and its options
(cd "$out" && ${LAUNCH:-} "$gen" --prompts-file list.jsonl --output video.mp4 --save-tensors tensors.safetensors \
  --report run.json "$@")
[ "$mode" = make ] && { echo "golden run: $out"; exit 0; }
# shellcheck disable=SC2086 # COMPARE_FLAGS is a list of flags
exec "$cmp" "$out" "$golden" --report "$out/report" --json "$out/compare.json" --junit "$out/junit.xml" \
  --overwrite ${COMPARE_FLAGS:-}
