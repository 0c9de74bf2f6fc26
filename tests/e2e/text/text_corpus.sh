#!/usr/bin/env bash
# The multilingual prompt corpus (tools/reference/text_corpus.py: ~2,400 texts in 20 categories) through
# omni-generate's prompt cleaning and tokenizer, against diffusers' own text path (tools/reference/text_reference.py:
# Wan's prompt_clean, i.e. ftfy.fix_text + html.unescape twice + whitespace, then the folder's tokenizer.json as
# T5TokenizerFast(tokenizer_file=...) reads it, called as _get_t5_prompt_embeds calls it), at max length 512, on two
# tokenizer folders made by
# tools/reference/umt5_vocab.sh:
#   umt5       the real google/umt5-xxl tokenizer.json with the published Wan2.2 tokenizer configs
#   converted  a multilingual SentencePiece model (vocab 8000, nmt_nfkc) as transformers converts and saves it
# The cleaned text, the ids and the attention mask must be equal, text by text.
#   text_corpus.sh PROMPT_IDS WORK VENV
# PROMPT_IDS TOKENIZER_DIR MAX_LEN < corpus.jsonl writes one {"cleaned", "input_ids", "attention_mask"} line per
# {"category", "text"} line. The tokenizer folders are cached in $OMNI_TEST_CACHE/umt5_vocab if set, else
# WORK/cache (the first run downloads a 20 MB sdist from PyPI).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
tool=$1; work=$2; venv=${REFERENCE_VENV:-$3}
need_venv "$venv"
ref=$SOURCE_DIR/tools/reference
py=$venv/bin/python
max_len=512
mkdir -p "$work"
cache=${OMNI_TEST_CACHE:+$OMNI_TEST_CACHE/umt5_vocab}
cache=${cache:-$work/cache}
run=$work/run
rm -rf "$run"; mkdir -p "$run"
export PYTHONWARNINGS=ignore TRANSFORMERS_VERBOSITY=error TOKENIZERS_PARALLELISM=false

start=$SECONDS
"$ref/umt5_vocab.sh" "$cache" "$venv" || fail "tools/reference/umt5_vocab.sh $cache"
"$py" "$ref/text_corpus.py" > "$run/corpus.jsonl"
echo "corpus: $(wc -l < "$run/corpus.jsonl") texts; tokenizers ready in $((SECONDS - start)) s"

# The reference on both folders, and (for information) umt5 as transformers 5's AutoTokenizer rebuilds it; in parallel.
pids=()
for d in umt5 converted; do
  "$py" "$ref/text_reference.py" "$cache/$d" "$run/corpus.jsonl" $max_len > "$run/expected-$d.jsonl" 2> "$run/reference-$d.err" &
  pids+=($!)
done
"$py" "$ref/text_reference.py" "$cache/umt5" "$run/corpus.jsonl" $max_len --loader auto \
  > "$run/auto-umt5.jsonl" 2> "$run/reference-auto.err" &
pids+=($!)
for i in "${!pids[@]}"; do
  if ! wait "${pids[$i]}"; then
    echo "FAIL: text_reference.py (run $i) failed:"; cat "$run"/reference-*.err; exit 1
  fi
done
grep -h "^NOTE" "$run/reference-auto.err" || true
echo "references in $((SECONDS - start)) s"

for d in umt5 converted; do
  t0=$SECONDS
  set +e
  "$tool" "$cache/$d" $max_len < "$run/corpus.jsonl" > "$run/got-$d.jsonl" 2> "$run/got-$d.err"
  rc=$?
  set -e
  if [ $rc != 0 ]; then echo "FAIL: $d: $tool exited $rc:"; tail -20 "$run/got-$d.err"; exit 1; fi
  echo "$d: $(basename "$tool") took $((SECONDS - t0)) s"
done

"$py" - "$run" "$cache" <<'PY'
import collections, json, os, sys

run, cache = sys.argv[1], sys.argv[2]
SHOW = 5


def load(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            try:
                rows.append(json.loads(line))
            except ValueError as e:
                rows.append({"unparsable": f"line {n}: {e}: {line[:200]!r}"})
    return rows


def pieces(d):
    with open(os.path.join(cache, d, "tokenizer.json"), encoding="utf-8") as f:
        j = json.load(f)
    v = [p for p, _ in j["model"]["vocab"]]
    return lambda i: v[i] if isinstance(i, int) and 0 <= i < len(v) else "?"


def first_diff(a, b):
    for k, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return k
    return min(len(a), len(b)) if len(a) != len(b) else None


def short(s, n=300):
    s = json.dumps(s, ensure_ascii=True)
    return s if len(s) <= n else s[:n] + '..."'


failed = False
for d in ("umt5", "converted"):
    exp, got = load(os.path.join(run, f"expected-{d}.jsonl")), load(os.path.join(run, f"got-{d}.jsonl"))
    piece = pieces(d)
    if len(exp) != len(got):
        print(f"FAIL: {d}: {len(got)} lines from the tool, {len(exp)} texts")
        failed = True
    per = collections.OrderedDict()
    shown = 0
    for k, e in enumerate(exp):
        cat = e["category"]
        c = per.setdefault(cat, [0, 0, 0, 0])  # texts, cleaned differs, ids differ, mask differs
        c[0] += 1
        g = got[k] if k < len(got) else {"unparsable": "missing line"}
        bad_clean = g.get("cleaned") != e["cleaned"]
        bad_ids = g.get("input_ids") != e["input_ids"]
        bad_mask = g.get("attention_mask") != e["attention_mask"]
        c[1] += bad_clean
        c[2] += bad_ids
        c[3] += bad_mask
        if (bad_clean or bad_ids or bad_mask) and shown < SHOW:
            shown += 1
            print(f"--- {d} mismatch {shown}: text {k + 1} [{cat}]")
            print(f"  text:             {short(e['text'])}")
            if "unparsable" in g:
                print(f"  tool output:      {g['unparsable']}")
                continue
            print(f"  cleaned expected: {short(e['cleaned'])}")
            print(f"  cleaned got:      {short(g.get('cleaned'))}{'' if bad_clean else '  (equal)'}")
            for key in ("input_ids", "attention_mask"):
                a, b = e[key], g.get(key) or []
                p = first_diff(a, b)
                if p is None:
                    continue
                lo = max(0, p - 3)
                print(f"  {key} differ at {p} (of {len(a)} expected, {len(b)} got): expected {a[lo:p + 5]}, "
                      f"got {b[lo:p + 5]}")
                if key == "input_ids":
                    print(f"    pieces expected {[piece(i) for i in a[lo:p + 5]]}, got {[piece(i) for i in b[lo:p + 5]]}")
    total = [sum(c[i] for c in per.values()) for i in range(4)]
    print(f"{d}: {'category':<16} {'texts':>6} {'cleaned':>8} {'ids':>6} {'mask':>6}   (mismatches)")
    for cat, c in per.items():
        print(f"{d}: {cat:<16} {c[0]:>6} {c[1]:>8} {c[2]:>6} {c[3]:>6}")
    print(f"{d}: {'all':<16} {total[0]:>6} {total[1]:>8} {total[2]:>6} {total[3]:>6}")
    if any(total[1:]):
        print(f"FAIL: {d}: {max(total[1:])} of {total[0]} texts differ from the reference's (cleaned {total[1]}, ids "
              f"{total[2]}, mask {total[3]})")
        failed = True

# For information: where transformers 5's AutoTokenizer differs from umt5's tokenizer.json read as it is.
exp, auto = load(os.path.join(run, "expected-umt5.jsonl")), load(os.path.join(run, "auto-umt5.jsonl"))
diff = collections.Counter()
for e, t in zip(exp, auto):
    if e["input_ids"] != t["input_ids"]:
        pairs = {(x, y) for x, y in zip(e["input_ids"], t["input_ids"]) if x != y}
        diff["unk 3 as 2" if pairs == {(3, 2)} else "other"] += 1
print(f"info: umt5: {sum(diff.values())} texts whose ids under transformers 5's AutoTokenizer differ from "
      f"tokenizer.json's ({dict(diff)}): it rebuilds the tokenizer with unk_id 2 (<s>) for 3 (<unk>) and a "
      f"WhitespaceSplit (no lone ▁ before a special token)")
sys.exit(1 if failed else 0)
PY
echo "text_corpus: all texts equal ($((SECONDS - start)) s)"
