#!/usr/bin/env bash
# Remakes the parity references of tests/data/reference from their inputs with record.py.
#
#   tools/reference/cases.sh OUT_ROOT [CASE...]   record into OUT_ROOT/<case>/{expected.safetensors,case.json}
#   tools/reference/cases.sh --check [CASE...]    record into a temporary folder and compare every tensor with
#                                                 the committed expected.safetensors (max abs <= $TOLERANCE,
#                                                 default 1e-6) and the entries of case.json; exits 1 on any
#                                                 difference
#
# CASE is one of the names below (default: all). OUT_ROOT=tests/data/reference rewrites the committed
# references in place. The inputs stay where they are: the checkpoints (tests/data/reference/<case>/model) and
# the conditioning image, which is copied beside an i2v case's case.json (case.json names it "image.png").
# Runs tools/reference/setup.sh first (quick when the environment is there).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ref=$(cd "$here/../.." && pwd)/tests/data/reference
venv=${REFERENCE_VENV:-$here/.venv}
all_cases=(t2v-a14b-tiny i2v-a14b-tiny ti2v-5b-tiny)

# record CASE OUT_DIR [record.py flags...]: the case's checkpoint in, OUT_DIR/{expected.safetensors,case.json} out.
record() {
  local name=$1 out=$2
  shift 2
  "$venv/bin/python" "$here/record.py" --model "$ref/$name/model" \
    --out "$out/expected.safetensors" --case-json "$out/case.json" "$@"
}

# The inputs of each case, as its committed case.json states them. --unit-seed makes the stand-alone
# unit.transformer.* / unit.vae.* tensors; the fixtures drew them with seeds 101, 102, 103.
run_case() {
  local name=$1 out=$2
  mkdir -p "$out"
  case $name in
    t2v-a14b-tiny)
      # Two experts (boundary_ratio 0.875 from model_index.json), flow_shift 3 from the scheduler config,
      # the prompt truncated at 24 tokens.
      record "$name" "$out" \
        --prompt "A red fox runs through the snow, cinematic lighting" \
        --negative-prompt "blurry, low quality, static frame" \
        --height 32 --width 48 --num-frames 9 --num-inference-steps 6 \
        --guidance-scale 4 --guidance-scale-2 3 --seed 42 --max-sequence-length 24 --unit-seed 101
      ;;
    i2v-a14b-tiny)
      [[ "$out/image.png" -ef "$ref/$name/image.png" ]] || cp "$ref/$name/image.png" "$out/image.png"
      record "$name" "$out" --image "$out/image.png" \
        --prompt "The camera pans slowly over the city at night" \
        --negative-prompt "blurry, low quality, static frame" \
        --height 32 --width 48 --num-frames 9 --num-inference-steps 6 \
        --guidance-scale 3.5 --seed 7 --max-sequence-length 24 --unit-seed 102
      ;;
    ti2v-5b-tiny)
      # Text-only TI2V-5B: WanPipeline with expand_timesteps, one expert.
      record "$name" "$out" \
        --prompt "Waves roll onto a sandy beach at sunset" \
        --negative-prompt "blurry, low quality, static frame" \
        --height 64 --width 32 --num-frames 9 --num-inference-steps 5 \
        --guidance-scale 5 --seed 123 --max-sequence-length 24 --unit-seed 103
      ;;
    *)
      echo "cases.sh: unknown case '$name' (known: ${all_cases[*]})" >&2
      return 2
      ;;
  esac
}

usage() { sed -n '2,14p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2; exit 2; }

[[ $# -ge 1 ]] || usage
check=false
if [[ $1 == --check ]]; then
  check=true
  out_root=$(mktemp -d)
  trap 'rm -rf "$out_root"' EXIT
elif [[ $1 == -* ]]; then
  usage
else
  out_root=$1
fi
shift
cases=("$@")
[[ ${#cases[@]} -gt 0 ]] || cases=("${all_cases[@]}")

"$here/setup.sh" >/dev/null

status=0
for name in "${cases[@]}"; do
  start=$SECONDS
  run_case "$name" "$out_root/$name"
  echo "cases.sh: $name recorded in $((SECONDS - start)) s"
  if $check; then
    echo "cases.sh: $name against the committed reference"
    "$venv/bin/python" "$here/compare.py" --quiet --tolerance "${TOLERANCE:-1e-6}" \
      --cases "$ref/$name/case.json" "$out_root/$name/case.json" \
      "$ref/$name/expected.safetensors" "$out_root/$name/expected.safetensors" || status=1
  fi
done
exit $status
