#!/usr/bin/env bash
# Bit-identity of two builds of omni-generate on one rank: the same runs on the reference fixtures with each
# binary, their --save-tensors and --dump-tensors files (every transformer call's inputs and output, each
# block, the text encoder, the VAE) compared with omni-compare at tolerance 0. For refactors that must not
# change a number.
#   tools/compare_builds.sh OLD_GENERATE NEW_GENERATE [OMNI_COMPARE] [WORK_DIR]
# e.g. git worktree add /tmp/old <rev> && (cd /tmp/old && BUILD_DIR=build bash tools/build.sh), then
#      tools/compare_builds.sh /tmp/old/build/apps/omni-generate build/apps/omni-generate
set -uo pipefail
old=$1 new=$2
cmp=${3:-$(dirname "$0")/../build/apps/omni-compare/omni-compare}
work=${4:-${TMPDIR:-/tmp}/omni-compare-builds}
ref=$(cd "$(dirname "$0")/.." && pwd)/tests/data/reference
common=(--device cpu --dtype float32 --vae-dtype float32 --height 32 --width 48 --num-frames 9 --num-inference-steps 3
        --seed 3 --max-sequence-length 24 --prompt "A red fox runs through the snow" --negative-prompt "blurry"
        --log-level warn)
fails=0
run_case() {
  local name=$1; shift
  for which in old new; do
    local bin=$old dir=$work/$name-$which
    [ $which = new ] && bin=$new
    rm -rf "$dir"; mkdir -p "$dir"
    if ! "$bin" "${common[@]}" "$@" --output "$dir/out.mp4" --save-tensors "$dir/t.safetensors" \
        --dump-tensors "$dir/d.safetensors" >"$dir/log" 2>&1; then
      echo "FAIL: $name: the $which build failed"; cat "$dir/log"; fails=$((fails + 1)); return
    fi
  done
  for f in t d; do
    if out=$("$cmp" "$work/$name-new/$f.safetensors" "$work/$name-old/$f.safetensors" --tolerance 0 2>&1); then
      echo "$name $f: $(echo "$out" | tail -1)"
    else
      echo "FAIL: $name $f:"; echo "$out" | tail -5; fails=$((fails + 1))
    fi
  done
}
run_case t2v --model "$ref/t2v-a14b-tiny/model" --guidance-scale 4 --guidance-scale-2 3
run_case t2v-euler-fbcache --model "$ref/t2v-a14b-tiny/model" --guidance-scale 4 --sample-solver euler \
  --step-cache fbcache --step-cache-threshold 0.5 --num-inference-steps 6
run_case i2v --model "$ref/i2v-a14b-tiny/model" --image "$ref/i2v-a14b-tiny/image.png" --guidance-scale 3.5
run_case ti2v-image --model "$ref/ti2v-5b-tiny/model" --image "$ref/i2v-a14b-tiny/image.png" --guidance-scale 5 \
  --height 64 --width 32
run_case ti2v-text-12-frames --model "$ref/ti2v-5b-tiny/model" --guidance-scale 5 --height 64 --width 32 --num-frames 12
[ $fails = 0 ] && echo "compare_builds: every tensor identical"
exit $((fails > 0))
