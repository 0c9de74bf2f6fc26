#!/usr/bin/env bash
# The diffusers reference of the multilingual case, recorded here (the checkpoint's text encoder holds the real
# UMT5 vocabulary's 256,384 rows: 33 MB, made rather than committed):
#   multilingual_record.sh MAKE_CHECKPOINT VOCAB_DIR CASE_DIR VENV
# CASE_DIR/model: omni-make-checkpoint's tiny T2V-A14B with --vocab-size 256384 whose tokenizer folder is the real
# umt5-xxl one as the Wan2.2 Diffusers folders carry it (VOCAB_DIR/umt5 of tools/reference/umt5_vocab.sh:
# tokenizer.json, tokenizer_config.json, special_tokens_map.json; no spiece.model). CASE_DIR/expected.safetensors
# and case.json: tools/reference/record.py (diffusers, ftfy installed, the tokenizer read from tokenizer.json) on
# the prompt and the preset's Chinese negative prompt of CASE_DIR/flags (written here, one flag per line, for
# multilingual_case.sh to pass omni-generate the same run).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
make_checkpoint=$1; vocab=$2; case_dir=$3; venv=${REFERENCE_VENV:-$4}
need_venv "$venv"
rm -rf "$case_dir"; mkdir -p "$case_dir"
"$make_checkpoint" --kind t2v-a14b --preset tiny --vocab-size 256384 --seed 77 --output "$case_dir/model" > /dev/null
rm -rf "$case_dir/model/tokenizer"; mkdir "$case_dir/model/tokenizer"
cp "$vocab/umt5/tokenizer.json" "$vocab/umt5/tokenizer_config.json" "$vocab/umt5/special_tokens_map.json" \
  "$case_dir/model/tokenizer/"

# Curly quotes and apostrophe, an em dash, an ellipsis, Chinese in curly quotes, a character outside the
# vocabulary (one <unk>, id 3), mojibake, an HTML entity and full-width letters; the negative prompt is the
# Wan2.2 presets' own (configs/wan2.2-t2v-a14b.yaml).
prompt='A girl’s “Café Noir” neon sign flickers in the rain — “慢动作” close-up of 𠀋 on wet glass… cafÃ© &amp; ＡＢＣ'
negative=$(sed -n 's/^negative-prompt: "\(.*\)"$/\1/p' "$SOURCE_DIR/configs/wan2.2-t2v-a14b.yaml")
[ -n "$negative" ] || fail "no negative-prompt in configs/wan2.2-t2v-a14b.yaml"
flags=(--prompt "$prompt" --negative-prompt "$negative" --height 32 --width 48 --num-frames 5 --num-inference-steps 3
       --guidance-scale 4 --guidance-scale-2 3 --seed 88 --max-sequence-length 128)
printf '%s\n' "${flags[@]}" > "$case_dir/flags"
PYTHONWARNINGS=ignore "$venv/bin/python" "$SOURCE_DIR/tools/reference/record.py" --model "$case_dir/model" \
  --out "$case_dir/expected.safetensors" --case-json "$case_dir/case.json" "${flags[@]}" > "$case_dir/record.log" 2>&1 ||
  { cat "$case_dir/record.log"; fail "record.py"; }
# What the case is about: the ids diffusers fed the encoder hold the unknown character's <unk> (3), and none of
# transformers 5's <s> (2) for it.
"$venv/bin/python" - "$case_dir/expected.safetensors" <<'PY'
import sys
from safetensors.torch import load_file
t = load_file(sys.argv[1])
ids = t["prompt.input_ids"][0].tolist()
if 3 not in ids or 2 in ids:
    sys.exit(f"FAIL: the recorded prompt ids {ids} lack <unk> 3 (or hold <s> 2)")
print(f"recorded: prompt {sum(t['prompt.attention_mask'][0].tolist())} tokens, negative "
      f"{sum(t['negative.attention_mask'][0].tolist())} tokens")
PY
