#!/usr/bin/env bash
# Runs every recipe of the manual: each command block of README.md and docs/*.md that follows a line
# "<!-- recipe -->", with bash, on the tiny fixture models (docs/development.md#recipes says how they are scaled
# down). A recipe that fails (a renamed flag, a changed default, a missing input) fails the run, naming its file
# and line.
#   tools/recipes.sh [BUILD_DIR] [FILE.md ...]     (default: build, README.md and docs/*.md)
# Environment: OMNI_RECIPE_FLAGS (appended to every omni-generate command), OMNI_RECIPE_LAYOUT (sbatch's LAYOUT),
# RECIPE_WORK (scratch folder, default BUILD_DIR/recipes).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$root/build}" && pwd)
shift || true
files=("$@")
[ ${#files[@]} -gt 0 ] || files=("$root/README.md" "$root"/docs/*.md)
work=${RECIPE_WORK:-$build/recipes}
ref=$root/tests/data/reference
flags=${OMNI_RECIPE_FLAGS:---height 32 --width 32 --num-frames 5 --num-inference-steps 2 --max-sequence-length 16 --device cpu}
layout=${OMNI_RECIPE_LAYOUT:---use-hsdp --hsdp-shard-size 4}
rm -rf "$work"
mkdir -p "$work/bin" "$work/hub"

# The Hugging Face cache of the recipes: each Wan-AI repository is a tiny fixture of the same kind.
hub_repo() {  # ORG/NAME FIXTURE_MODEL_DIR
  local repo=$work/hub/models--${1%%/*}--${1#*/}
  mkdir -p "$repo/refs" "$repo/snapshots"
  echo recipe > "$repo/refs/main"
  ln -s "$2" "$repo/snapshots/recipe"
}
hub_repo Wan-AI/Wan2.2-T2V-A14B-Diffusers "$ref/t2v-a14b-tiny/model"
hub_repo Wan-AI/Wan2.2-I2V-A14B-Diffusers "$ref/i2v-a14b-tiny/model"
hub_repo Wan-AI/Wan2.2-TI2V-5B-Diffusers "$ref/ti2v-5b-tiny/model"
hub_repo Wan-AI/Wan2.1-T2V-14B-Diffusers "$ref/t2v-wan21-tiny/model"
hub_repo Wan-AI/Wan2.1-I2V-14B-480P-Diffusers "$ref/i2v-wan21-tiny/model"
hub_repo Wan-AI/Wan2.1-FLF2V-14B-720P-Diffusers "$ref/flf2v-wan21-tiny/model"
hub_repo Wan-AI/Wan2.1-VACE-14B-diffusers "$ref/vace-tiny/model"
hub_repo Wan-AI/Wan2.2-Animate-14B-Diffusers "$ref/animate-tiny/model"

# The commands the recipes call, scaled down.
cat > "$work/bin/omni-generate" <<EOF
#!/usr/bin/env bash
# shellcheck disable=SC2086
exec "$build/apps/omni-generate" "\$@" $flags
EOF
cat > "$work/bin/omni-compare" <<EOF
#!/usr/bin/env bash
exec "$build/apps/omni-compare/omni-compare" "\$@"
EOF
cat > "$work/bin/mpirun" <<EOF
#!/usr/bin/env bash
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_NUM_THREADS=1
exec "$(command -v mpirun)" -q --oversubscribe -x OMP_NUM_THREADS -x PATH -x HF_HUB_CACHE "\$@"
EOF
# sbatch: the batch script run at once in a pretend 4-task allocation, launching with mpirun (sbatch's own
# options are taken and dropped).
cat > "$work/bin/sbatch" <<EOF
#!/usr/bin/env bash
while [[ \$# -gt 0 && \$1 == -* ]]; do shift; done
export SLURM_NTASKS=4 SLURM_JOB_ID=recipe LAUNCH=mpirun DEVICE=cpu OMNI_GENERATE=omni-generate
export LAYOUT="$layout"
script=\$1; shift
[[ \$script == /* ]] || script=$root/\$script
exec bash "\$script" "\$@"
EOF
chmod +x "$work/bin"/*

# The inputs the recipes name.
inputs=$work/inputs
mkdir -p "$inputs"
cp "$ref/i2v-jpeg/image.jpg" "$inputs/cat.jpg"
cp "$ref/i2v-flf2v/first.jpg" "$inputs/first.jpg"
cp "$ref/i2v-flf2v/last.png" "$inputs/last.png"
cp "$ref/t2v-v2v/clip.mp4" "$inputs/clip.mp4"
# VACE's control video and mask, square like the recipes' scaled-down videos (a control video keeps its aspect).
ffmpeg -v error -y -f lavfi -i "testsrc2=size=64x64:rate=16" -frames:v 12 -c:v libx264 -pix_fmt yuv420p \
  "$inputs/pose.mp4"
ffmpeg -v error -y -filter_complex \
  "color=c=black:size=64x64:rate=16[bg];color=c=white:size=32x32:rate=16[box];[bg][box]overlay=x=16:y=16:shortest=1" \
  -frames:v 12 -c:v libx264 -pix_fmt yuv420p "$inputs/mask.mp4"

# Wan2.2-Animate: the folder Wan2.2's preprocess_data.py writes (with --replace_flag), and the character alone.
mkdir -p "$inputs/preprocessed"
for f in pose face bg mask; do cp "$ref/animate-replace/$f.mp4" "$inputs/preprocessed/src_$f.mp4"; done
cp "$ref/animate-replace/ref.jpg" "$inputs/preprocessed/src_ref.png"
cp "$ref/animate-segments/ref.jpg" "$inputs/dancer.jpg"

# Extract: FILE LINE, then the block's lines, then a line "<<END>>".
extract() {
  awk -v f="$1" '
    /^<!-- recipe -->$/ { want = 1; next }
    want && /^```/ && !inblock { inblock = 1; print f " " NR + 1; next }
    inblock && /^```$/ { print "<<END>>"; inblock = 0; want = 0; next }
    inblock { print; next }
    { want = 0 }' "$1"
}

n=0 failed=0
for f in "${files[@]}"; do
  rel=${f#"$root"/}
  while IFS= read -r header; do
    body=
    while IFS= read -r line && [[ $line != "<<END>>" ]]; do body+=$line$'\n'; done
    n=$((n + 1))
    dir=$work/$n
    mkdir -p "$dir"
    cp -r "$inputs"/* "$dir"/
    ln -s "$root/tools" "$dir/tools"  # the manual's commands name tools/... as from the repository's root
    printf '%s' "$body" > "$dir/recipe.sh"
    if (cd "$dir" && PATH="$work/bin:$PATH" HF_HUB_CACHE="$work/hub" bash -euo pipefail recipe.sh </dev/null >"$dir/log" 2>&1)
    then
      echo "ok   recipe $n: $rel:${header##* }"
    else
      failed=$((failed + 1))
      echo "FAIL recipe $n: $rel:${header##* } (log: $dir/log)"
      tail -5 "$dir/log" | sed 's/^/     /'
    fi
  done < <(extract "$f")
done
echo "recipes: $n run, $((n - failed)) passed, $failed failed"
[ "$n" -gt 0 ] && [ "$failed" -eq 0 ]
