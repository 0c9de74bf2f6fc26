#!/usr/bin/env bash
# Text that is not UTF-8 is refused where it is read, before any model file is opened (issue 39): one error
# line naming the flag or the file (line, byte offset), exit 2 on every rank, no model loaded, nothing written.
# Each case on 1 and 2 ranks.
#   text_encoding.sh GENERATE MODEL_DIR WORK_DIR
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; model=$2; work=$3
rm -rf "$work"; mkdir -p "$work"
common=(--model "$model" --height 32 --width 48 --num-frames 5 --num-inference-steps 1 --output "$work/out.mp4")

printf 'a cat\xff\xfe bad utf8\n' >"$work/bad.txt"
printf 'a cat\nA dog\n' | iconv -f UTF-8 -t UTF-16 >"$work/utf16.txt"  # with a byte-order mark
printf 'a cat playing piano\n' | iconv -f UTF-8 -t UTF-16LE >"$work/utf16le.txt"  # without one
printf '{"prompt": "a\\ud800b"}\n' >"$work/surrogate.jsonl"
printf '{"prompt": "a cat"}\n{"prompt": "x", "seed": }\n' >"$work/broken.jsonl"
printf 'negative-prompt: "blurry \xe9"\n' >"$work/latin1.yaml"
printf '\xef\xbb\xbfa cat\r\n' >"$work/bom.txt"  # UTF-8 with its mark and CRLF: fine

for np in 1 2; do
  expect "np $np: --prompt with 0xC3 0x28" "$np" 2 "--prompt: not UTF-8 at byte 4: 0xC3 is not a UTF-8 sequence" -- \
    "${common[@]}" --prompt $'bad \xc3\x28 utf8'
  expect "np $np: --negative-prompt=, cut short" "$np" 2 "--negative-prompt: not UTF-8 at byte 5: 0xE7 0x8C is a UTF-8 sequence cut short" -- \
    "${common[@]}" --prompt "a cat" $'--negative-prompt=blurr\xe7\x8c'
  expect "np $np: prompts file with 0xFF 0xFE" "$np" 2 "--prompts-file $work/bad.txt line 1: not UTF-8 at byte 5: 0xFF" -- \
    "${common[@]}" --prompts-file "$work/bad.txt"
  expect "np $np: UTF-16 prompts file" "$np" 2 "the file is UTF-16LE with a byte-order mark, not UTF-8; convert it with: iconv -f UTF-16 -t UTF-8" -- \
    "${common[@]}" --prompts-file "$work/utf16.txt"
  expect "np $np: UTF-16LE prompts file, no mark" "$np" 2 "the file is UTF-16LE (no byte-order mark), not UTF-8" -- \
    "${common[@]}" --prompts-file "$work/utf16le.txt"
  expect "np $np: JSON Lines lone surrogate" "$np" 2 "$work/surrogate.jsonl line 1: not valid JSON at column 14: \\ud800 is half of a surrogate pair without its other half" -- \
    "${common[@]}" --prompts-file "$work/surrogate.jsonl"
  expect "np $np: JSON Lines syntax error" "$np" 2 "$work/broken.jsonl line 2: not valid JSON at column 25: syntax error while parsing value" -- \
    "${common[@]}" --prompts-file "$work/broken.jsonl"
  expect "np $np: Latin-1 YAML config" "$np" 2 "--config $work/latin1.yaml line 1: not UTF-8 at byte 25: 0xE9" -- \
    "${common[@]}" --prompt "a cat" --config "$work/latin1.yaml"
  if [ -e "$work/out.mp4" ]; then flunk "np $np: an output was written"; rm -f "$work/out.mp4"; fi
done
# What already worked still does: a UTF-8 mark and CRLF are dropped (the dry run lists the prompt as typed).
out=$("$gen" "${common[@]}" --prompts-file "$work/bom.txt" --dry-run 2>&1)
if grep -qF '"a cat"' <<<"$out" && ! grep -q 'omni-generate: error' <<<"$out"; then
  pass "UTF-8 with a byte-order mark and CRLF: the prompt is \"a cat\""
else
  flunk "UTF-8 with a byte-order mark and CRLF"; echo "$out"
fi
summary
