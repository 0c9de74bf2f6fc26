#!/usr/bin/env python3
"""diffusers' text path on a corpus: Wan's prompt_clean, then the tokenizer as the Wan pipelines call it.

    text_reference.py TOKENIZER_DIR CORPUS_JSONL MAX_LEN [--loader tokenizer-file|auto] > expected.jsonl

For each {"category", "text"} line of CORPUS_JSONL writes {"category", "text", "cleaned", "input_ids",
"attention_mask"} (ASCII JSON):
- cleaned: diffusers.pipelines.wan.pipeline_wan.prompt_clean(text): ftfy.fix_text (asserted installed and used),
  html.unescape twice, strip, `regex` \\s+ -> " ", strip. The copies of prompt_clean in the other Wan pipelines are
  asserted to be the same code.
- input_ids / attention_mask: the tokenizer as _get_t5_prompt_embeds calls it: padding "max_length", max_length
  MAX_LEN, truncation, add_special_tokens, return_attention_mask. Which tokenizer (--loader):
  tokenizer-file (the default): T5TokenizerFast(tokenizer_file=TOKENIZER_DIR/tokenizer.json, extra_ids=the
    folder's tokenizer_config.json's), the file read as its authors wrote it: its Unigram unk_id, normalizers and
    pre-tokenizer. This is what transformers 4.x (Wan2.2's pinned <= 4.51.3, and diffusers with it) loads for the
    folder, and what omni-generate reproduces (issue 20).
  auto: AutoTokenizer.from_pretrained(TOKENIZER_DIR), what diffusers gets under transformers 5: T5Tokenizer.__init__
    REBUILDS the backend from the file's vocabulary, with unk_id 2 (UMT5's <s>, not its <unk> 3), no normalizer
    but a Precompiled charsmap, and a WhitespaceSplit + Metaspace pre-tokenizer. Each such difference from the
    file is printed to stderr as a NOTE line; text_corpus.sh counts the texts it changes, for information.
Either way the tokenizer must be a fast (tokenizers) one whose vocabulary and added tokens are TOKENIZER_DIR's
tokenizer.json's.
"""
import argparse
import inspect
import json
import os
import re
import sys


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tokenizer_dir")
    ap.add_argument("corpus")
    ap.add_argument("max_len", type=int)
    ap.add_argument("--loader", choices=("tokenizer-file", "auto"), default="tokenizer-file")
    args = ap.parse_args()

    import diffusers.pipelines.wan.pipeline_wan as pw
    from diffusers.utils import is_ftfy_available
    import ftfy

    assert is_ftfy_available(), "ftfy is not installed: diffusers' prompt_clean would skip ftfy.fix_text"
    assert getattr(pw, "ftfy", None) is ftfy, "pipeline_wan did not import ftfy"
    assert "ftfy.fix_text" in inspect.getsource(pw.basic_clean)
    prompt_clean = pw.prompt_clean
    import importlib
    for mod in ("pipeline_wan_i2v", "pipeline_wan_video2video", "pipeline_wan_vace", "pipeline_wan_animate"):
        try:
            m = importlib.import_module(f"diffusers.pipelines.wan.{mod}")
        except ImportError:
            continue
        for fn in ("prompt_clean", "basic_clean", "whitespace_clean"):
            # The other pipelines call ftfy.fix_text unconditionally; pipeline_wan only when ftfy is installed.
            src = lambda f: re.sub(r"\s+", "", inspect.getsource(f).replace("if is_ftfy_available():", ""))
            assert src(getattr(m, fn)) == src(getattr(pw, fn)), f"{mod}.{fn} differs from pipeline_wan's"
        assert m.re is pw.re, f"{mod} uses another regex module"

    from transformers import AutoTokenizer, T5TokenizerFast

    path = os.path.join(args.tokenizer_dir, "tokenizer.json")
    with open(path, encoding="utf-8") as f:
        file_json = json.load(f)
    config_path = os.path.join(args.tokenizer_dir, "tokenizer_config.json")
    config = json.load(open(config_path, encoding="utf-8")) if os.path.exists(config_path) else {}
    if args.loader == "auto":
        tok = AutoTokenizer.from_pretrained(args.tokenizer_dir)
    else:
        tok = T5TokenizerFast(tokenizer_file=path, extra_ids=config.get("extra_ids", 100))
    assert tok.is_fast, f"{type(tok).__name__} is not a fast tokenizer"
    loaded = json.loads(tok.backend_tokenizer.to_str())
    assert loaded["model"]["type"] == file_json["model"]["type"]
    # The pieces as in the file; the scores too, up to the last digit (the Rust side re-serializes the doubles).
    assert [p for p, _ in loaded["model"]["vocab"]] == [p for p, _ in file_json["model"]["vocab"]], \
        "the loaded vocabulary is not tokenizer.json's"
    assert all(abs(a[1] - b[1]) <= 1e-12 * max(1.0, abs(b[1]))
               for a, b in zip(loaded["model"]["vocab"], file_json["model"]["vocab"])), "the scores differ"
    assert [(t["id"], t["content"]) for t in loaded["added_tokens"]][:len(file_json["added_tokens"])] == \
        [(t["id"], t["content"]) for t in file_json["added_tokens"]], "the added tokens are not tokenizer.json's"
    name = os.path.basename(os.path.normpath(args.tokenizer_dir))
    for key in ("normalizer", "pre_tokenizer", "post_processor", "decoder"):
        if loaded.get(key) != file_json.get(key):
            print(f"NOTE: {name}: transformers' {key} is {json.dumps(loaded.get(key))[:160]}, "
                  f"tokenizer.json's {json.dumps(file_json.get(key))[:160]}", file=sys.stderr)
    for key in ("unk_id", "byte_fallback"):
        if loaded["model"].get(key) != file_json["model"].get(key):
            piece = lambda i: file_json["model"]["vocab"][i][0] if isinstance(i, int) else None
            print(f"NOTE: {name}: transformers' model.{key} is {loaded['model'].get(key)!r} "
                  f"({piece(loaded['model'].get(key))!r}), tokenizer.json's {file_json['model'].get(key)!r} "
                  f"({piece(file_json['model'].get(key))!r})", file=sys.stderr)

    with open(args.corpus, encoding="utf-8") as f:
        rows = [json.loads(line) for line in f if line.strip()]
    out = sys.stdout
    batch = 256
    for start in range(0, len(rows), batch):
        part = rows[start:start + batch]
        cleaned = [prompt_clean(r["text"]) for r in part]
        enc = tok(cleaned, padding="max_length", max_length=args.max_len, truncation=True, add_special_tokens=True,
                  return_attention_mask=True)
        for r, c, ids, mask in zip(part, cleaned, enc["input_ids"], enc["attention_mask"]):
            assert len(ids) == args.max_len, f"{len(ids)} ids for {r['text']!r}"
            out.write(json.dumps({"category": r["category"], "text": r["text"], "cleaned": c,
                                  "input_ids": ids, "attention_mask": mask}, ensure_ascii=True) + "\n")


if __name__ == "__main__":
    sys.exit(main())
