#!/usr/bin/env bash
# Tokenizer folders with the config files as the published repositories and transformers write them
# (tokenizer_config.json, special_tokens_map.json: extra_ids, additional special tokens, bos <s>, AddedToken
# objects, ...), each tokenized by transformers 5 (AutoTokenizer, the tokenizer diffusers loads; the reference
# environment of tools/reference/setup.sh) and by omni-generate's tokenizer: the ids must be equal, and the pad id.
# Folders transformers refuses or would give ids we cannot are errors on our side (exit 3) naming the key.
#   tokenizer_configs.sh TOKENIZE_IDS SPIECE_MODEL WORK VENV
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
tool=$1; spiece=$2; work=$3; venv=${REFERENCE_VENV:-$4}
need_venv "$venv"
rm -rf "$work"; mkdir -p "$work"
"$venv/bin/python" - "$spiece" "$work" "$SOURCE_DIR" <<'PY'
import json, os, shutil, sys
from transformers import AutoTokenizer
spiece, work, root = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.join(root, "tools", "reference"))
from published_configs import published_tokenizer_files  # the same files the end-to-end test uses
published, stm_objects = published_tokenizer_files(spiece)
base = {"tokenizer_class": "T5Tokenizer", "eos_token": "</s>", "pad_token": "<pad>", "unk_token": "<unk>"}
cases = {
    "published": (published, stm_objects),
    "no_extra_ids_key": (base, None),          # T5Tokenizer's default: 100 extra ids
    "extra_ids_0": (dict(base, extra_ids=0), None),
    "bos_from_map_only": (dict(base, extra_ids=2), {"bos_token": "<s>"}),
    "new_tokens_in_order": (dict(base, extra_ids=2, additional_special_tokens=["<bar>", "<extra_id_1>", "<foo>", "<extra_id_0>"], bos_token="<s>"), None),
    "extra_listed_without_extra_ids": (dict(base, extra_ids=0, additional_special_tokens=["<extra_id_0>"]), None),
    "pad_is_eos": (dict(base, extra_ids=0, pad_token="</s>"), None),
    "ts5_extra_special_list": (dict(base, extra_ids=1, extra_special_tokens=["<extra_id_0>"]), None),
    "fast_class": (dict(base, tokenizer_class="T5TokenizerFast", extra_ids=5), None),
}
texts = ["A red fox runs through the snow", "a cat <extra_id_0> b", "a cat<extra_id_5>b and <extra_id_299>",
         "x </s> y <pad> z <unk>", "hello <s> world <foo> and <bar>", "<extra_id_1><extra_id_0>", "  spaced   out  "]
for name, (cfg, stm) in cases.items():
    d = os.path.join(work, name)
    os.makedirs(d)
    shutil.copy(spiece, d)
    json.dump(cfg, open(os.path.join(d, "tokenizer_config.json"), "w"), indent=1)
    if stm is not None:
        json.dump(stm, open(os.path.join(d, "special_tokens_map.json"), "w"), indent=1)
    tok = AutoTokenizer.from_pretrained(d)
    with open(os.path.join(d, "expected.txt"), "w") as f:
        f.write(f"pad {tok.pad_token_id}\n")
        for t in texts:
            f.write(json.dumps(tok(t).input_ids) + "\n")
with open(os.path.join(work, "texts.txt"), "w") as f:
    f.write("\n".join(texts) + "\n")
PY
for d in "$work"/*/; do
  name=$(basename "$d")
  "$tool" "$d" < "$work/texts.txt" > "$d/got.txt"
  if ! diff -u "$d/expected.txt" "$d/got.txt"; then fail "$name: ids differ from transformers'"; fi
  echo "ok: $name ($(($(wc -l < "$d/got.txt") - 1)) texts)"
done

# Values transformers would honour and we do not: one line, exit 3, naming the file and key.
bad() {  # bad NAME KEY JSON
  local d="$work/bad-$1"; mkdir -p "$d"; cp "$spiece" "$d/"; echo "$3" > "$d/tokenizer_config.json"
  set +e; "$tool" "$d" < /dev/null > "$d/out" 2> "$d/err"; local rc=$?; set -e
  [ $rc = 3 ] || { echo "FAIL: bad-$1 exited $rc, expected 3"; cat "$d/err"; exit 1; }
  [ "$(wc -l < "$d/err")" = 1 ] && grep -q "tokenizer_config.json: .*$2" "$d/err" ||
    { echo "FAIL: bad-$1: expected one line naming $2:"; cat "$d/err"; exit 1; }
  echo "ok: bad-$1: $(cat "$d/err")"
}
bad sp_kwargs sp_model_kwargs '{"sp_model_kwargs": {"enable_sampling": true, "alpha": 0.1}}'
bad split split_special_tokens '{"split_special_tokens": true}'
bad eos eos_token '{"eos_token": "<unk>"}'
bad class tokenizer_class '{"tokenizer_class": "LlamaTokenizer"}'
bad pad_new pad_token '{"pad_token": "<mypad>"}'
bad partial_extras additional_special_tokens '{"extra_ids": 3, "additional_special_tokens": ["<extra_id_0>"]}'
bad decoder added_tokens_decoder '{"extra_ids": 0, "added_tokens_decoder": {"5": {"content": "<pad>"}}}'
