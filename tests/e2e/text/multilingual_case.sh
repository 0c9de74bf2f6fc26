#!/usr/bin/env bash
# Parity with diffusers on text users type (the multilingual case of multilingual_record.sh), on NP ranks:
#   multilingual_case.sh GENERATE COMPARE NP CASE_DIR WORK [layout flags...]
# tests/e2e/parity/reference_case.sh's bounds (intermediates 1e-5, frames 1e-4), the tokenizer's ids and masks
# exactly among them; the sidecar's prompt_cleaned is diffusers' prompt_clean of the prompt (case.json), and
# --dry-run lists both prompts as diffusers cleaned them with the token counts of the recorded masks.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; compare=$2; np=$3; case_dir=$4; work=$5; shift 5
mapfile -t flags < "$case_dir/flags"
bash "$SOURCE_DIR/tests/e2e/parity/reference_case.sh" "$gen" "$compare" "$np" "$case_dir/model" \
  "$case_dir/expected.safetensors" "$work" 3 "${flags[@]}" "$@"
"$compare" "$work/dump.safetensors" "$case_dir/expected.safetensors" \
  --keys prompt.input_ids,prompt.attention_mask,negative.input_ids,negative.attention_mask --tolerance 0
launch "$np" "$gen" --model "$case_dir/model" --device cpu "${flags[@]}" "$@" --dry-run > "$work/dry-run.txt" ||
  fail "--dry-run"
python3 - "$work/out.mp4.json" "$case_dir/case.json" "$work/dry-run.txt" "$case_dir/expected.safetensors" <<'PY'
import json, struct, sys
side, case = json.load(open(sys.argv[1], encoding="utf-8")), json.load(open(sys.argv[2], encoding="utf-8"))
dry = open(sys.argv[3], encoding="utf-8").read()
cleaned = case.get("prompt_clean", {})
if "prompt" not in cleaned or side.get("prompt_cleaned") != cleaned["prompt"]:
    sys.exit(f"FAIL: sidecar prompt_cleaned {side.get('prompt_cleaned')!r}, diffusers' prompt_clean {cleaned!r}")
if side.get("negative_prompt_cleaned") != cleaned.get("negative"):
    sys.exit(f"FAIL: sidecar negative_prompt_cleaned {side.get('negative_prompt_cleaned')!r}")
# The recorded masks' sums: the tokens diffusers fed the encoder (none truncated at this max length).
with open(sys.argv[4], "rb") as f:
    header = json.loads(f.read(struct.unpack("<Q", f.read(8))[0]))
    base = f.tell()
    def mask_sum(key):
        meta = header[key]
        f.seek(base + meta["data_offsets"][0])
        raw = f.read(meta["data_offsets"][1] - meta["data_offsets"][0])
        width = {"I64": 8, "I32": 4}[meta["dtype"]]
        return sum(int.from_bytes(raw[i:i + width], "little", signed=True) for i in range(0, len(raw), width))
    tokens = {"prompt": mask_sum("prompt.attention_mask"), "negative": mask_sum("negative.attention_mask")}
for name, key in (("prompt", "prompt_tokens"), ("negative", "negative_prompt_tokens")):
    if side.get(key) != tokens[name]:
        sys.exit(f"FAIL: sidecar {key} {side.get(key)}, diffusers fed {tokens[name]} tokens")
    listed = f"{json.dumps(cleaned[name], ensure_ascii=False)} ({tokens[name]} of {case['max_sequence_length']} tokens"
    if listed not in dry:
        sys.exit(f"FAIL: --dry-run does not list {listed}")
print(f"sidecar and --dry-run: prompts as diffusers cleaned them, {tokens['prompt']} and {tokens['negative']} tokens")
PY
