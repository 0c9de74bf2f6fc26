#!/usr/bin/env bash
# The error catalogue (issue 39): an error that starts in a library (nlohmann's JSON, yaml-cpp, CLI11, libav*,
# libjpeg-turbo, libwebp, the safetensors header) reaches the user in our words: one line, the exit code of
# docs/DESIGN.md section 5, the file or flag named, none of the library's own tags ("[json.exception...]",
# "yaml-cpp", "terminate called", C++ type names), and no model weight read.
#   error_catalogue.sh GENERATE REFERENCE_DIR WORK_DIR
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; ref=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
base=(--prompt "a fox" --height 32 --width 48 --num-frames 5 --num-inference-steps 2 --max-sequence-length 16
      --output "$work/a.mp4")
t2v=(--model "$ref/t2v-a14b-tiny/model" "${base[@]}")

# said NAME NP RC TEXT -- flags...: exit RC on every rank, one error line containing TEXT, no library tag in it.
said() {
  local name=$1 np=$2 rc=$3 text=$4 out code
  shift 5
  out=$(mpi -t 120 "$np" "$gen" "$@" 2>&1)
  code=$?
  local line
  line=$(grep '^omni-generate: error' <<<"$out")
  if [ "$code" != "$rc" ] || [ "$(error_lines "$out")" != 1 ] || ! grep -qF -- "$text" <<<"$line" ||
     grep -q 'loaded in' <<<"$out"; then
    flunk "$name: exit $code (want $rc), $(error_lines "$out") error lines, want text: $text"
    echo "$out"
  elif grep -qE 'json\.exception|yaml-cpp|YAML::|terminate called|what\(\)|std::|c10::|Exception raised from|CLI::' \
       <<<"$line"; then
    flunk "$name: a library's own words reach the user: $line"
  else
    pass "$name (exit $code): ${line#omni-generate: error: }"
  fi
}

# A model folder like the fixture's, its files linked, one of them replaced by `content`.
model_with() {
  local dir=$work/$1 file=$2
  rm -rf "$dir"; cp -rs "$ref/t2v-a14b-tiny/model" "$dir"
  rm -f "$dir/$file"
  cat > "$dir/$file"
  echo "$dir"
}

# nlohmann's JSON: a config that is not JSON, a key of the wrong type.
m=$(printf '{"_class_name": "WanPipeline", ' | model_with broken_index model_index.json)
said json_syntax 2 3 "$m/model_index.json: invalid JSON at byte 32, line 1, column 32" -- --model "$m" "${base[@]}"
m=$(sed 's/"num_layers": [0-9]*/"num_layers": "two"/' "$ref/t2v-a14b-tiny/model/transformer/config.json" |
    model_with wrong_type transformer/config.json)
said json_type 1 3 "num_layers" -- --model "$m" "${base[@]}"
# The safetensors header: a length that fits, then text that is not JSON.
m=$(python3 -c 'import struct, sys; h = b"{\"a\": [1, 2"; sys.stdout.buffer.write(struct.pack("<Q", len(h)) + h)' |
    model_with bad_header transformer/diffusion_pytorch_model.safetensors)
said safetensors_header 2 3 "header is not valid JSON" -- --model "$m" "${base[@]}"
# yaml-cpp: a --config that is not YAML.
printf 'height: [32, 48\nwidth: 48\n' > "$work/bad.yaml"
said yaml_syntax 2 2 "$work/bad.yaml" -- "${t2v[@]}" --config "$work/bad.yaml"
# CLI11: a misspelt flag, a number that is not one.
said cli_unknown_flag 1 2 "--heigth" -- "${t2v[@]}" --heigth 32
said cli_not_a_number 2 2 "--seed" -- "${t2v[@]}" --seed seven
# libav*: a clip cut short, a file that is no video.
head -c 3000 "$ref/t2v-v2v/clip.mp4" > "$work/cut.mp4"
said libav_truncated 2 3 "$work/cut.mp4" -- "${t2v[@]}" --video "$work/cut.mp4"
echo "plain text" > "$work/text.webm"
said libav_not_a_video 1 3 "$work/text.webm" -- "${t2v[@]}" --video "$work/text.webm"
# libjpeg-turbo and libwebp: an image cut short, a WebP that is not one.
i2v=(--model "$ref/i2v-a14b-tiny/model" "${base[@]}")
head -c 1500 "$ref/i2v-jpeg/image.jpg" > "$work/cut.jpg"
said libjpeg_truncated 2 3 "$work/cut.jpg" -- "${i2v[@]}" --image "$work/cut.jpg"
printf 'RIFF\x10\0\0\0WEBPVP8 garbage' > "$work/bad.webp"
said libwebp_garbage 1 3 "$work/bad.webp" -- "${i2v[@]}" --image "$work/bad.webp"

if ls "$work"/a.mp4* >/dev/null 2>&1; then flunk "a failed run left an output behind"; fi
echo "error_catalogue: $passes passed, $fails failed"
[ "$fails" = 0 ]
