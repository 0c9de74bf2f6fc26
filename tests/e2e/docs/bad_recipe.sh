#!/usr/bin/env bash
# tools/recipes.sh on two recipes, one good and one with a flag misspelt as a user's copy would break on it: the
# runner must pass the first, fail the second naming its file and line, and exit non-zero.
#   bad_recipe.sh SOURCE_DIR BUILD_DIR WORK
set -uo pipefail
src=$1; build=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
cat > "$work/page.md" <<'MD'
# A page

<!-- recipe -->
```sh
omni-generate --model Wan-AI/Wan2.2-TI2V-5B-Diffusers --prompt "A fox" --output fox.mp4
```

<!-- recipe -->
```sh
omni-generate --model Wan-AI/Wan2.2-TI2V-5B-Diffusers --prompt "A fox" --num-frame 5 --output fox.mp4
```
MD
RECIPE_WORK=$work/run bash "$src/tools/recipes.sh" "$build" "$work/page.md" > "$work/out" 2>&1
rc=$?
cat "$work/out"
fail() { echo "FAIL: $*"; exit 1; }
[ $rc -ne 0 ] || fail "the runner passed a recipe with a misspelt flag"
grep -q "^ok   recipe 1: .*page.md:5" "$work/out" || fail "the good recipe did not pass"
grep -q "^FAIL recipe 2: .*page.md:10" "$work/out" || fail "the bad recipe was not named with its line"
grep -q "unknown flag --num-frame; did you mean --num-frames" "$work/out" || fail "the flag's error is not shown"
grep -q "recipes: 2 run, 1 passed, 1 failed" "$work/out" || fail "wrong count"
echo "ok: a misspelt flag in a recipe fails the runner"
