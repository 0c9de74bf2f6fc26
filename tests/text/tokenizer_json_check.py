#!/usr/bin/env python3
"""Compares text/tokenizer_json.{h,cpp} (through the tokenizer_json_check driver) with transformers.

    tools/reference/.venv/bin/python tests/text/tokenizer_json_check.py --driver BUILD/tokenizer_json_check \
        [--umt5 /tmp/umt5/tokenizer.json] [--spiece tests/data/reference/t2v-headdim16/model/tokenizer/spiece.model] \
        [--workdir /tmp/tokenizer_json_check] [--tokenizer EXTRA.json ...]

For every tokenizer file (the UMT5 one, a T5 one transformers converts from --spiece, the reference checkpoints'
tokenizer.json files, and variants made by editing the JSON: Metaspace prepend_scheme "first" with and without
split, byte_fallback true, added tokens with single_word / lstrip / rstrip / normalized flags) and every loader:
  t5          transformers.T5TokenizerFast(tokenizer_file=path)                 vs driver --loader t5
  pretrained  transformers.AutoTokenizer.from_pretrained(dir) (what diffusers does; dir holds the tokenizer.json
              and a tokenizer_config.json naming T5Tokenizer)                 vs driver --loader pretrained
  tokenizers  tokenizers.Tokenizer.from_file(path)                              vs driver --loader tokenizers
  checkpoint  (files in a folder with a tokenizer_config.json: the reference checkpoints) AutoTokenizer.from_pretrained
              of that folder as it is                     vs driver --loader pretrained --extra-ids <its extra_ids>
the ids of every corpus text (add_special_tokens=True) must be equal. Prints a summary per file and loader and
the first mismatches; exits 1 on any mismatch.
"""
import argparse
import copy
import glob
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))

WAN_NEGATIVE = (
    "色调艳丽，过曝，静态，细节模糊不清，字幕，风格，作品，画作，画面，静止，整体发灰，最差质量，低质量，JPEG压缩残留，丑陋的，残缺的，"
    "多余的手指，画得不好的手部，画得不好的脸部，畸形的，毁容的，形态畸形的肢体，手指融合，静止不动的画面，杂乱的背景，三条腿，背景人很多，倒着走"
)

SEEDS = [
    "A cat walks on the grass, realistic style.",
    "Two anthropomorphic cats in comfy boxing gear and bright gloves fight intensely on a spotlighted stage.",
    "“Hello,” she said — quietly… then ‘goodbye’.",
    "The camera pans slowly… revealing a city at dusk — neon signs flicker.",
    "It's a dog's life: naïve café owners’ résumé, coöperate, façade.",
    WAN_NEGATIVE,
    "一只猫在草地上行走，写实风格。",
    "夕阳下的海滩，海浪轻轻拍打着沙滩，镜头缓慢推进。",
    "猫が草の上を歩いている、リアルなスタイル。",
    "東京の夜景、ネオンが輝く。カメラはゆっくりと移動する。",
    "고양이가 잔디 위를 걷고 있습니다. 사실적인 스타일.",
    "Кошка идёт по траве, реалистичный стиль.",
    "قطة تمشي على العشب، أسلوب واقعي.",
    "घास पर चलती हुई एक बिल्ली, यथार्थवादी शैली।",
    "Ελληνικά: μια γάτα περπατά στο γρασίδι.",
    "עברית: חתול הולך על הדשא.",
    "ภาษาไทย แมวเดินบนหญ้า",
    "Tiếng Việt: con mèo đi trên cỏ.",
    "emoji 😀🐱🎬 family 👨‍👩‍👧‍👦 flag 🇯🇵 thumbs 👍🏽 heart ❤️",
    "rare CJK 𠀋𠀌 and 𪚥 and 𩸽 in a row",
    "<extra_id_5> fills in <extra_id_0>, not <extra_id_299> nor <extra_id_300>",
    "special </s> in the middle <pad> and <unk> and <s> and [eod] done",
    "</s></s><pad></s>",
    "x</s>y<extra_id_1>z",
    "multiple   spaces    here          and  two",
    "   leading and trailing spaces   ",
    "tabs\tand\nnewlines\r\nand\u000bvertical\u000cfeed",
    "full-width ＡＢＣ　ｄｅｆ　１２３！？ and half-width ｶﾀｶﾅ",
    "combining: e\u0301 a\u0308 n\u0303 Å vs A\u030a, ﬁ ligature, ™ ①",
    "control chars: \u0001\u0002\u001f\u007f and zero width \u200b\u200c\u200d and bom \ufeff",
    "numbers 3.14159, 1,000,000 and 2024-05-06 12:34:56",
    "code: def f(x): return x**2  # comment",
    "URL https://example.com/path?q=1&r=2 and email a.b@c.de",
    "nbsp\u00a0here and thin\u2009space and ideographic\u3000space",
    "hello world",
    "hello",
    "Hello",
    "abab ab ab",
    "<mask>",
    "a <mask> b  <mask>   c<mask>d",
    "  x and   x",
    "helloworld hello, (hello) hello_there",
    "\u00e9t\u00e9 \u00c9T\u00c9",
    "Wan2.2 text-to-video 720P 24fps",
    "",
    " ",
    "\t",
    "\n\n",
    "\u0001",
    "\u0001hello",
    "\u200bhello",
    "<extra_id_5>hello",
    " <extra_id_5> hello",
]

PIECES = [
    "cat", "dog", "猫", "の", "고양이", "кошка", "قطة", "बिल्ली", "😀", "👨‍👩‍👧", "𠀋", "—", "…", "“", "”", "’",
    "<extra_id_5>", "</s>", "<pad>", "<unk>", "[eod]", "<mask>", "hello", "ab", "x", "ＡＢＣ", "e\u0301", "\u0001",
    "--", "---", "-----", "...", ".", "abab",
    "\t", "\n", " ", "  ", "   ", "\u3000", "\u00a0", "a", "The", "realistic", "风格", "，", "。", "!", "?", "'",
    "\"", "(", ")", "0", "42", "ﬁ", "™", "Ω", "ß", "İ", "\u200d", "\ufeff", "\u2581", "▁▁", "<0x41>",
]


def corpus(n_random=1200, seed=1234):
    rng = random.Random(seed)
    texts = list(SEEDS)
    for s in SEEDS:
        texts += [" " + s, s + " ", "  " + s + "  ", s.upper(), s.replace(" ", "  "), s.replace(" ", "\t")]
    for _ in range(n_random):
        kind = rng.random()
        if kind < 0.5:
            k = rng.randint(1, 12)
            texts.append("".join(rng.choice(PIECES) + (" " if rng.random() < 0.5 else "") for _ in range(k)))
        elif kind < 0.8:
            a, b = rng.choice(SEEDS), rng.choice(SEEDS)
            cut = rng.randint(0, len(a))
            texts.append(a[:cut] + rng.choice(PIECES) + b[rng.randint(0, len(b)):])
        else:
            texts.append("".join(chr(rng.choice([rng.randint(0x20, 0x7e), rng.randint(0xa0, 0x2fff),
                                                 rng.randint(0x3000, 0x9fff), rng.randint(0xac00, 0xd7a3),
                                                 rng.randint(0x1f300, 0x1faff), rng.randint(0x20000, 0x2a6df),
                                                 rng.randint(0x1, 0x1f)]))
                                 for _ in range(rng.randint(1, 40))))
    # A long prompt (about 512 tokens) for timing.
    texts.append(" ".join([SEEDS[1], SEEDS[3], WAN_NEGATIVE, SEEDS[9], SEEDS[11]] * 4))
    # Lone surrogates cannot be UTF-8: drop them (random code points never produce them here, but be safe).
    return [t for t in texts if not any(0xD800 <= ord(c) <= 0xDFFF for c in t)]


def make_variants(args, work):
    """Writes the tokenizer files to check; returns [(name, path)]."""
    from transformers import T5TokenizerFast

    files = []
    if args.umt5 and os.path.exists(args.umt5):
        files.append(("umt5", args.umt5))
    if args.spiece and os.path.exists(args.spiece):
        # transformers 5 converts a spiece.model when a folder holding it (and no tokenizer.json) is loaded with
        # from_pretrained; T5TokenizerFast(vocab_file=...) does NOT read the model (it builds T5Tokenizer's
        # minimal vocabulary: <pad> </s> <unk> ▁ and the extra ids), kept as a degenerate all-<unk> case.
        import shutil
        from transformers import AutoTokenizer
        src = os.path.join(work, "spiece_only")
        os.makedirs(src, exist_ok=True)
        shutil.copy(args.spiece, os.path.join(src, "spiece.model"))
        with open(os.path.join(src, "tokenizer_config.json"), "w") as f:
            json.dump({"tokenizer_class": "T5Tokenizer"}, f)
        conv_dir = os.path.join(work, "converted_t5")
        AutoTokenizer.from_pretrained(src).save_pretrained(conv_dir)
        files.append(("converted_t5", os.path.join(conv_dir, "tokenizer.json")))
        minimal_dir = os.path.join(work, "t5_vocab_file_minimal")
        T5TokenizerFast(vocab_file=args.spiece).save_pretrained(minimal_dir)
        files.append(("t5_vocab_file_minimal", os.path.join(minimal_dir, "tokenizer.json")))
    for p in sorted(glob.glob(os.path.join(ROOT, "tests/data/reference/*/model/tokenizer/tokenizer.json"))):
        files.append(("ref_" + p.split(os.sep)[-4], p))
    for p in args.tokenizer or []:
        files.append((os.path.basename(os.path.dirname(p)) or p, p))

    def variant(name, base, edit):
        with open(base, encoding="utf-8") as f:
            d = json.load(f)
        edit(d)
        path = os.path.join(work, name, "tokenizer.json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            json.dump(d, f, ensure_ascii=False)
        files.append((name, path))

    def metaspace(scheme, split):
        def edit(d):
            d["pre_tokenizer"] = {"type": "Metaspace", "replacement": "\u2581", "prepend_scheme": scheme, "split": split}
        return edit

    def added(d):
        # Ids as tokenizers would save them: past the vocabulary and the file's own added tokens (the ids are
        # advisory for tokenizers, but transformers' from_pretrained keys its added_tokens_decoder by them).
        next_id = max([len(d["model"]["vocab"]) - 1] + [t["id"] for t in d["added_tokens"]]) + 1
        extra = [
            {"id": 0, "content": "hello", "single_word": True, "lstrip": False, "rstrip": False, "normalized": True,
             "special": False},
            {"id": 0, "content": "<mask>", "single_word": False, "lstrip": True, "rstrip": True, "normalized": False,
             "special": True},
            {"id": 0, "content": "  x", "single_word": False, "lstrip": False, "rstrip": False, "normalized": True,
             "special": False},
            {"id": 0, "content": "ab", "single_word": False, "lstrip": False, "rstrip": False, "normalized": False,
             "special": False},
            {"id": 0, "content": "ＡＢＣ", "single_word": False, "lstrip": False, "rstrip": False, "normalized": True,
             "special": False},
        ]
        for i, t in enumerate(extra):
            t["id"] = next_id + i
        d["added_tokens"] += extra

    ref = dict(files).get("ref_t2v-a14b-tiny")
    if ref:  # a Precompiled normalizer (control characters deleted) with prepend_scheme "first"
        variant("ref_t2v-a14b-tiny_first", ref, metaspace("first", True))
        variant("ref_t2v-a14b-tiny_ws_first_added_tokens", ref, lambda d: (added(d), d.__setitem__("pre_tokenizer", {
            "type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {
                "type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}]})))
    umt5 = dict(files).get("umt5")
    conv = dict(files).get("converted_t5")
    if umt5:
        variant("umt5_first", umt5, metaspace("first", True))
        variant("umt5_first_nosplit_bytefallback", umt5,
                lambda d: (metaspace("first", False)(d), d["model"].__setitem__("byte_fallback", True)))
        variant("umt5_never_bytefallback", umt5,
                lambda d: (metaspace("never", True)(d), d["model"].__setitem__("byte_fallback", True)))
        variant("umt5_added_tokens", umt5, added)
        # Other normalizers, with prepend_scheme "first" (which sees leading text the normalizer deletes).
        variant("umt5_strip_replace_first", umt5, lambda d: (metaspace("first", True)(d), d.__setitem__(
            "normalizer", {"type": "Sequence", "normalizers": [
                {"type": "Strip", "strip_left": True, "strip_right": True},
                {"type": "Replace", "pattern": {"String": "ab"}, "content": ""},
                {"type": "Replace", "pattern": {"Regex": "-{2,3}"}, "content": "\u2014"},
                {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
                {"type": "Replace", "pattern": {"Regex": "\\.+"}, "content": "\u2026"},
                {"type": "Prepend", "prepend": "x"}]})))
    if conv:
        variant("converted_t5_first", conv, metaspace("first", True))
        variant("converted_t5_ws_first", conv, lambda d: d.__setitem__("pre_tokenizer", {
            "type": "Sequence", "pretokenizers": [{"type": "WhitespaceSplit"}, {
                "type": "Metaspace", "replacement": "\u2581", "prepend_scheme": "first", "split": True}]}))
        variant("converted_t5_added_tokens", conv, added)
    return files


def reference(loader, path, work, name):
    if loader == "checkpoint":  # the checkpoint's own tokenizer folder, as diffusers loads it
        from transformers import AutoTokenizer
        tok = AutoTokenizer.from_pretrained(os.path.dirname(path))
        return lambda texts: [tok(t).input_ids for t in texts]
    if loader == "t5":
        from transformers import T5TokenizerFast
        tok = T5TokenizerFast(tokenizer_file=path)
        return lambda texts: [tok(t).input_ids for t in texts]
    if loader == "pretrained":
        from transformers import AutoTokenizer
        d = os.path.join(work, "pretrained_" + name)
        os.makedirs(d, exist_ok=True)
        with open(path, "rb") as f, open(os.path.join(d, "tokenizer.json"), "wb") as g:
            g.write(f.read())
        with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
            json.dump({"tokenizer_class": "T5Tokenizer"}, f)
        tok = AutoTokenizer.from_pretrained(d)
        return lambda texts: [tok(t).input_ids for t in texts]
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(path)
    return lambda texts: [e.ids for e in tok.encode_batch(texts, add_special_tokens=True)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--driver", required=True, help="the built tokenizer_json_check")
    ap.add_argument("--umt5", required=True, help="the umt5-xxl tokenizer.json (tools/reference/umt5_vocab.sh)")
    ap.add_argument("--spiece", default=os.path.join(ROOT, "tests/data/reference/t2v-headdim16/model/tokenizer/spiece.model"))
    ap.add_argument("--tokenizer", action="append", help="another tokenizer.json to check")
    ap.add_argument("--workdir", required=True)
    ap.add_argument("--loaders", default="t5,pretrained,tokenizers,checkpoint")
    ap.add_argument("--show", type=int, default=5, help="mismatches to print per file and loader")
    args = ap.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    texts = corpus()
    lines = "".join(json.dumps(t) + "\n" for t in texts)
    files = make_variants(args, args.workdir)
    failed = False
    print(f"{len(texts)} texts")
    for name, path in files:
        for loader in args.loaders.split(","):
            if loader == "checkpoint" and not os.path.exists(os.path.join(os.path.dirname(path), "tokenizer_config.json")):
                continue
            try:
                ref = reference(loader, path, args.workdir, name)(texts)
            except Exception as e:  # a file transformers cannot load in this way: nothing to compare
                print(f"{name:36s} {loader:10s} reference failed: {type(e).__name__}: {str(e)[:120]}")
                continue
            cmd = [args.driver, "--loader", loader, "--time", path]
            if loader == "checkpoint":
                config = os.path.join(os.path.dirname(path), "tokenizer_config.json")
                if not os.path.exists(config):
                    continue
                with open(config, encoding="utf-8") as f:
                    extra_ids = json.load(f).get("extra_ids", 100)
                cmd = [args.driver, "--loader", "pretrained", "--extra-ids", str(extra_ids), "--time", path]
            r = subprocess.run(cmd, input=lines, capture_output=True, text=True, encoding="utf-8")
            if r.returncode != 0:
                print(f"{name:36s} {loader:10s} DRIVER FAILED rc={r.returncode}: {r.stderr.strip()[:300]}")
                failed = True
                continue
            got = [json.loads(l) for l in r.stdout.splitlines()]
            bad = [i for i in range(len(texts)) if i >= len(got) or got[i] != ref[i]]
            timing = r.stderr.strip().splitlines()[-1] if r.stderr.strip() else ""
            print(f"{name:36s} {loader:10s} {len(texts) - len(bad)}/{len(texts)} equal   [{timing}]")
            for i in bad[: args.show]:
                print(f"    text {json.dumps(texts[i], ensure_ascii=False)}\n      ref {ref[i]}\n      got {got[i] if i < len(got) else None}")
            failed |= bool(bad)
    print("FAILED" if failed else "all equal")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
