#!/usr/bin/env python3
"""models::PrecompiledCharsmap against tokenizers' Precompiled normalizer, text by text.

    precompiled_check.py PRECOMPILED_CHECK WORK [REPO_ROOT]

Run with the reference environment's python (tools/reference/.venv: sentencepiece, tokenizers, transformers).
PRECOMPILED_CHECK is the driver built from precompiled_check.cpp; WORK a scratch folder (recreated).

Charsmaps: SentencePiece models trained here with each built-in normalization rule (nmt_nfkc, the default,
nmt_nfkc_cf, nfkc, nfkc_cf), the spiece.model files of tests/data/reference, the tokenizer.json that
transformers' T5TokenizerFast writes for such a model (its base64 decoded by our code), and the tokenizer.json
files of tests/data/reference. For each, every text of the corpus (hand-written cases by category, seeded random
mixes, and sweeps over every code point of Unicode alone and followed by combining marks) must normalize to
exactly what tokenizers.normalizers.Precompiled(blob).normalize_str(text) gives. Malformed charsmaps must be input
errors (exit 3) naming the file. Exit 1 on any difference.
"""
import base64
import glob
import hashlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
import unicodedata

import sentencepiece as spm
from sentencepiece import sentencepiece_model_pb2
from tokenizers import normalizers

TRAIN_TEXT = [
    "A red fox runs through the snow.", "Ｆｕｌｌ－ｗｉｄｔｈ ＡＢＣ １２３", "ｶﾀｶﾅ ﾃｽﾄ", "ﬁnance ﬂow ①②③ ㎏ ™ ½",
    "日本語のテキストです。", "한국어 텍스트", "中文文本测试", "العربية ﻻ ﷺ", "हिन्दी क्षत्रिय", "Ünïcödé café naïve",
    "emoji 👍🏽 👨‍👩‍👧 🇯🇵 1️⃣", "tabs\tand\nnewlines\r\n", "Straße ΣΊΣΥΦΟΣ İstanbul",
]
RULES = ["nmt_nfkc", "nmt_nfkc_cf", "nfkc", "nfkc_cf"]


def train_model(rule):
    out = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(TRAIN_TEXT * 20), model_writer=out, vocab_size=200, hard_vocab_limit=False,
        model_type="unigram", normalization_rule_name=rule, character_coverage=1.0, minloglevel=2)
    return out.getvalue()


def charsmap_of(model_bytes):
    proto = sentencepiece_model_pb2.ModelProto()
    proto.ParseFromString(model_bytes)
    return proto.normalizer_spec.precompiled_charsmap


def precompiled_of_json(path):
    def find(node):
        if not isinstance(node, dict):
            return None
        if node.get("type") == "Precompiled":
            return node
        for child in node.get("normalizers") or []:
            found = find(child)
            if found:
                return found
        return None
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    return find(doc.get("normalizer"))


# ---------------------------------------------------------------------------------------------------------- corpus
def hand_written():
    c = chr
    t = [
        # full width, half width
        "ＡＢＣ１２３！", "ｈｅｌｌｏ　ｗｏｒｌｄ", "ａｂｃＸＹＺ０９＃＄％＆（）＊＋，－．／：；＜＝＞？＠［＼］＾＿｀｛｜｝～",
        "ｶﾞｷﾞｸﾞﾊﾟﾋﾟ ｱｲｳｴｵ ﾜｦﾝ ｰ ｯｬｭｮ", "ﾊﾞﾝﾄﾞ", "ｶ" + c(0xFF9E), "ｶ" + c(0x3099), "か" + c(0x3099), "ｳﾞ",
        "￠￡￢￣￤￥￦", "｡｢｣､･", "ﾠﾡﾢﾣ",
        # ligatures, compatibility, circled, units, fractions, super/subscripts
        "ﬁ ﬂ ﬀ ﬃ ﬄ ﬅ ﬆ", "ﬁ" + c(0x301), "Ĳ ĳ Ŀ ŀ ŉ ǅ ǈ ǋ Ǳ", "① ② ⑳ ㉑ ㊿ Ⓐ ⓐ ⑴ ⒜ ⒈", "㎏ ㎞ ㎡ ㏄ ㍱ ㍻ ㋀ ㌀",
        "™ ℠ ℡ № ℃ ℉ Å K Ω", "½ ⅓ ¼ ¾ ⅞ ↉ ⅟", "x² y³ H₂O ⁿ ₙ ¹²³", "Ⅰ Ⅱ Ⅻ ⅰ ⅻ ℵ ℏ ℓ", "𝐀𝐁𝐂 𝔄𝔅 𝕬 𝖆 𝟎𝟏𝟗",
        "… ‥ ′ ″ ‴ ⁇ ⁈ ‼", "¨ ¯ ´ ¸ ˘ ˙ ˚ ˛ ˜ ˝", "µ ſ ϐ ϑ ϒ ϕ ϖ ϰ ϱ ϲ", "㈱ ㈲ ㍿ ㋿ 🄰 🅐 🆎",
        # combining sequences
        "e" + c(0x301), "E" + c(0x301) + c(0x323), "a" + c(0x30A), "Ａ" + c(0x301), "n" + c(0x303) + "o" + c(0x308),
        "é" + c(0x301), c(0x301) + "leading mark", "ḁ̶̷" * 3, "Z" + "".join(c(0x300 + i) for i in range(20)),
        "ｅ" + c(0x301), "①" + c(0x301), "ﬁ" + c(0x308), "Å" + c(0x301), c(0x2126) + c(0x301),
        # Hangul
        "한국어 텍스트", c(0x1100) + c(0x1161), c(0x1100) + c(0x1161) + c(0x11A8), c(0x1112) + c(0x1161) + c(0x11AB),
        "ㄱㅏㄴ ㅎㅏㄴ", c(0x3131) + c(0x314F), "ﾡﾤ", c(0x115F) + c(0x1160), "가" + c(0x11A8), "ᄀᄀ가ᅡᆨᆨ",
        # CJK, Japanese
        "中文文本测试，句号。", "日本語のテキストです。カタカナとひらがな。", "⺀⺁⼀⼁⼂ 㐀 𠀀 𪜀 丽 丸", "豈 更 車 賈 滑",
        "〜〝〞〟 「」『』【】", "ヿ ゟ ㋐ ㌔ ㌢", "ｷｬﾝﾍﾟｰﾝ中", "全角スペース　あり",
        # Arabic with presentation forms, Hebrew
        "العربية", "ﻻ ﻷ ﻹ ﻵ", "ﷺ ﷻ ﷲ", "ﺍﺏﺕﺙ ﻋﻌﻊﻉ", "ﭐﭑﭒ", "مرحبا بالعالم ١٢٣ ٤٥٦", "שָׁלוֹם עוֹלָם", "ﬠ ﬡ ﬢ ﬣ ﬤ ﬥ ﬦ ﬧ ﬨ ﬩",
        "ٱلرَّحْمَٰنِ", c(0x640) * 3,
        # Hindi and other Indic (virama conjuncts, nukta)
        "हिन्दी", "क्षत्रिय", "क्ष", "क्‍ष", "क्‌ष", "स्त्री", "द्ध्र्य", "क़ ख़ ग़ ज़ ड़ ढ़ फ़ य़", c(0x915) + c(0x93C),
        "ক্ষ বাংলা", "ત્ર ગુજરાતી", "த்தமிழ்", "ಕನ್ನಡ", "മലയാളം ന്‍", "తెలుగు క్ష", "ଓଡ଼ିଆ କ୍ଷ", "ਪੰਜਾਬੀ", "සිංහල ශ්‍රී",
        "ไทย กำ ำ", "ລາວ ຳ", "ខ្មែរ", "မြန်မာ",
        # emoji
        "👍", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵🇺🇸🇬🇧", "🇯", "1️⃣ #️⃣ *️⃣", "1" + c(0x20E3), "❤️ ❤" + c(0xFE0E),
        "🧑🏿‍🤝‍🧑🏻", "👩‍💻", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "©️ ®️ ™️", "☺ ☺️", "🫠 🫨 🪿", "a👍b", "👍" + c(0x301),
        # controls, spaces, zero width
        "a\r\nb", "\r\n", "\r", "\n", "\t", "a\tb\nc\rd", "\x00", "a\x00b", "\x01\x02\x1e\x1f\x7f", "\x80\x85\x9f",
        "™\x1eg", "\x1ea", "a\x1e", "a" + c(0xA0) + "b", c(0x2000) + c(0x2001) + c(0x2002) + c(0x200A) + c(0x202F) + c(0x205F),
        c(0x3000), c(0x1680) + c(0x180E), c(0x200B) + "x" + c(0x200C) + "y" + c(0x200D) + "z" + c(0x2060), c(0xFEFF) + "bom",
        c(0xAD) + "soft hyphen", c(0x2028) + c(0x2029), c(0x200E) + c(0x200F) + c(0x202A) + c(0x202E), "  double  space  ",
        " ", "", c(0x34F), "a" + c(0x34F) + c(0x301), c(0xFE00) + c(0xFE0F), "邊" + c(0xE0100), c(0xE0001) + c(0xE0041),
        # UTF-8 edges (valid, odd looking)
        c(0x7F) + c(0x80) + c(0x7FF) + c(0x800) + c(0xFFFF) + c(0x10000) + c(0x10FFFF), c(0xFFFD), c(0xFFFE),
        c(0xE000) + c(0xF8FF) + c(0xF0000) + c(0x10FFFD), c(0xFDD0) + c(0xFDEF), c(0xD7FF) + c(0xE000), "Ã©",
        "Ã¼ber â€™", c(0xC0) + c(0xC1) + c(0xF5) + c(0xFF), c(0x1D400) + c(0x1D7FF), c(0x2FA1D), c(0x323AF),
        # case folding material (nmt_nfkc_cf)
        "Straße STRASSE ß ẞ", "ΣΊΣΥΦΟΣ ς σ", "İstanbul ı I", "ǅ ǈ ǋ ǲ", "Ꭰ ꭰ", "ＡＢＣ ａｂｃ", "Ⓐ ⓐ", "𐐀 𐐨", "ﬀ ﬅ",
    ]
    long = " ".join(t)
    t += [long, long * 3, "".join(reversed(long))]
    return t


POOLS = {
    "ascii": [chr(i) for i in range(0x20, 0x7F)],
    "fullwidth": [chr(i) for i in range(0xFF01, 0xFF5F)],
    "halfkana": [chr(i) for i in range(0xFF61, 0xFFA0)],
    "kana": [chr(i) for i in range(0x3041, 0x3100)],
    "combining": [chr(i) for i in range(0x300, 0x370)] + [chr(0x3099), chr(0x309A), chr(0x20E3), chr(0xFE0F)],
    "compat": [chr(i) for i in list(range(0x2460, 0x24FF)) + list(range(0x3300, 0x3400)) + list(range(0x2150, 0x2190))
               + list(range(0xFB00, 0xFB07)) + list(range(0x2100, 0x2150))],
    "cjk": [chr(i) for i in range(0x4E00, 0x4F00)] + [chr(i) for i in range(0xF900, 0xFA00)],
    "hangul": [chr(i) for i in range(0xAC00, 0xAD00)] + [chr(i) for i in range(0x1100, 0x1200)]
              + [chr(i) for i in range(0x3131, 0x318F)],
    "arabic": [chr(i) for i in range(0x600, 0x700)] + [chr(i) for i in range(0xFB50, 0xFDFF)]
              + [chr(i) for i in range(0xFE70, 0xFEFD)],
    "indic": [chr(i) for i in range(0x900, 0x980)] + [chr(i) for i in range(0x980, 0x9FF)]
             + [chr(i) for i in range(0xD00, 0xD80)],
    "emoji": [chr(i) for i in range(0x1F300, 0x1F650)] + [chr(i) for i in range(0x1F3FB, 0x1F400)]
             + [chr(i) for i in range(0x1F1E6, 0x1F200)] + [chr(0x200D), chr(0xFE0F), chr(0x20E3), "#", "*", "1"],
    "space": [chr(i) for i in [0x9, 0xA, 0xB, 0xC, 0xD, 0x20, 0x85, 0xA0, 0x1680, 0x2000, 0x2003, 0x200A, 0x200B,
                                0x200C, 0x200D, 0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF, 0x0, 0x1, 0x1F, 0x7F]],
    "latin": [chr(i) for i in range(0xC0, 0x250)] + [chr(i) for i in range(0x1E00, 0x1F00)],
    "greek": [chr(i) for i in range(0x370, 0x400)] + [chr(i) for i in range(0x1F00, 0x2000)],
    "math": [chr(i) for i in range(0x1D400, 0x1D800)],
}


def random_mixes(count, seed=20240917):
    rng = random.Random(seed)
    names = sorted(POOLS)
    out = []
    for k in range(count):
        chosen = rng.sample(names, rng.randint(1, 4))
        length = rng.choice([1, 2, 3, 5, 8, 20, 60, 200])
        out.append("".join(rng.choice(POOLS[rng.choice(chosen)]) for _ in range(length)))
    return out


def code_point_sweeps():
    """Every code point (no surrogates), in runs, alone and followed by combining marks."""
    cps = [cp for cp in range(1, 0x110000) if not 0xD800 <= cp <= 0xDFFF]
    planes = [cp for cp in cps if cp < 0x40000 or cp >= 0xE0000]
    out = []
    for i in range(0, len(planes), 64):
        out.append("".join(chr(cp) for cp in planes[i:i + 64]))
    for i in range(0x40000, 0xE0000, 0x4000):  # the empty planes, sampled
        out.append("".join(chr(cp) for cp in range(i, i + 32)))
    bmp = [cp for cp in cps if cp < 0x10000]
    for mark in (0x301, 0x3099, 0xFE0F, 0x200D, 0x94D):
        for i in range(0, len(bmp), 48):
            out.append("".join(chr(cp) + chr(mark) for cp in bmp[i:i + 48]))
    # every 3-byte code point after 2-byte keys: a grapheme of 5 bytes is replaced whole when its first code
    # point is a key, so these lines show every difference of grapheme segmentation that can matter (code
    # points ICU 72 does not know but Unicode 17 makes Extend / SpacingMark, U+0897, U+1ACF.., included)
    three = [cp for cp in bmp if cp >= 0x800]
    for key in ("\u00bd", "\u00a0", "\u00aa", "\u0340", "\u01c5"):
        for i in range(0, len(three), 64):
            out.append("".join(key + chr(cp) + "|" for cp in three[i:i + 64]))
    late = [0x897] + list(range(0x1ACF, 0x1ADE)) + list(range(0x1AE0, 0x1AEC))
    keys2 = [chr(cp) for cp in range(0x80, 0x800) if unicodedata.normalize("NFKC", chr(cp)) != chr(cp)]
    out.append("".join(k + chr(m) + " " for k in keys2 for m in late[:3]))
    out.append("\r" + chr(0x897) + "\n" + chr(0x1ACF) + "\t" + chr(0x897) + "a" + chr(0x113D1) + "\u00bd" + chr(0x113D1) + "\n")
    # every code point alone between spaces of ASCII, so each is its own grapheme for sure
    for i in range(0, 0x3400, 128):
        out.append(" ".join(chr(cp) for cp in range(max(i, 1), i + 128)))
    return out


def corpus():
    texts = hand_written() + random_mixes(2000) + code_point_sweeps()
    seen, unique = set(), []
    for t in texts:
        if t not in seen:
            seen.add(t)
            unique.append(t)
    return unique


# ---------------------------------------------------------------------------------------------------------- checks
def run_driver(driver, charsmap_path, texts):
    payload = "".join(json.dumps(t) + "\n" for t in texts)
    proc = subprocess.run([driver, charsmap_path], input=payload.encode("utf-8"), capture_output=True)
    if proc.returncode != 0:
        return None, proc.stderr.decode("utf-8", "replace")
    lines = proc.stdout.decode("utf-8").split("\n")
    assert lines[-1] == "", "driver output does not end in a newline"
    return [json.loads(line) for line in lines[:-1]], ""


def compare(name, driver, charsmap_path, blob, texts):
    reference = normalizers.Precompiled(blob)
    expected = [reference.normalize_str(t) for t in texts]
    got, err = run_driver(driver, charsmap_path, texts)
    if got is None:
        print(f"FAIL {name}: driver failed: {err.strip()}")
        return False
    if len(got) != len(expected):
        print(f"FAIL {name}: {len(got)} outputs for {len(texts)} texts")
        return False
    bad = [i for i in range(len(texts)) if got[i] != expected[i]]
    changed = sum(1 for i in range(len(texts)) if expected[i] != texts[i])
    if bad:
        print(f"FAIL {name}: {len(bad)} of {len(texts)} texts differ")
        for i in bad[:10]:
            first = next((k for k in range(min(len(got[i]), len(expected[i]))) if got[i][k] != expected[i][k]),
                         min(len(got[i]), len(expected[i])))
            lo = max(0, first - 8)
            print(f"  text {i}: {ascii(texts[i][:200])}\n    near char {first}: ours {ascii(got[i][lo:first + 12])}"
                  f" tokenizers {ascii(expected[i][lo:first + 12])}")
        return False
    print(f"ok   {name}: {len(texts)} texts identical ({changed} changed by the normalizer)")
    return True


def expect_input_error(name, driver, path, needle, texts=("ＡＢＣ１２３", "abc")):
    payload = "".join(json.dumps(t) + "\n" for t in texts)
    proc = subprocess.run([driver, path], input=payload.encode(), capture_output=True)
    err = proc.stderr.decode("utf-8", "replace").strip()
    if proc.returncode != 3 or path not in err or needle not in err:
        print(f"FAIL {name}: expected exit 3 naming {path} and '{needle}', got {proc.returncode}: {err}")
        return False
    print(f"ok   {name}: exit 3: {err}")
    return True


def main():
    driver, work = os.path.abspath(sys.argv[1]), sys.argv[2]
    root = sys.argv[3] if len(sys.argv) > 3 else os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    texts = corpus()
    print(f"corpus: {len(texts)} texts, {sum(len(t) for t in texts)} code points")

    cases = []  # (name, path the driver reads, raw blob)
    blobs = {}
    for rule in RULES:
        model = train_model(rule)
        blob = charsmap_of(model)
        assert blob, f"trained {rule} model has no precompiled_charsmap"
        path = os.path.join(work, f"trained_{rule}.bin")
        open(path, "wb").write(blob)
        open(os.path.join(work, f"trained_{rule}.model"), "wb").write(model)
        cases.append((f"trained {rule}", path, blob))
        blobs[rule] = blob
    spieces = sorted(glob.glob(os.path.join(root, "tests/data/reference/*/model/tokenizer/spiece.model")))
    assert spieces, "no tests/data/reference/*/model/tokenizer/spiece.model"
    seen = set()
    for sp in spieces:
        blob = charsmap_of(open(sp, "rb").read())
        digest = hashlib.sha256(blob).hexdigest()
        if digest in seen:
            continue
        seen.add(digest)
        path = os.path.join(work, f"spiece_{digest[:12]}.bin")
        open(path, "wb").write(blob)
        cases.append((f"{os.path.relpath(sp, root)} charsmap", path, blob))
    # tokenizer.json as transformers' converter writes it (base64 inside, decoded by our code)
    from transformers import T5TokenizerFast
    for label, model_path in [("reference spiece.model", spieces[0]),
                              ("trained nmt_nfkc_cf", os.path.join(work, "trained_nmt_nfkc_cf.model"))]:
        # transformers 5's T5TokenizerFast(vocab_file=...) ignores the file (it builds a minimal vocabulary and no
        # normalizer); from_pretrained on a folder holding only spiece.model converts it, Precompiled included.
        name = label.replace(" ", "_").replace(".", "_")
        src_dir, out_dir = os.path.join(work, "t5src_" + name), os.path.join(work, "t5fast_" + name)
        os.makedirs(src_dir)
        shutil.copy(model_path, os.path.join(src_dir, "spiece.model"))
        T5TokenizerFast.from_pretrained(src_dir).save_pretrained(out_dir)
        tj = os.path.join(out_dir, "tokenizer.json")
        entry = precompiled_of_json(tj)
        assert entry, f"{tj}: no Precompiled normalizer"
        blob = base64.b64decode(entry["precompiled_charsmap"], validate=True)
        assert blob == charsmap_of(open(model_path, "rb").read()), f"{tj}: charsmap differs from {model_path}'s"
        cases.append((f"T5TokenizerFast tokenizer.json of {label}", tj, blob))
    for tj in sorted(glob.glob(os.path.join(root, "tests/data/reference/*/model/tokenizer/tokenizer.json"))):
        entry = precompiled_of_json(tj)
        if entry:
            cases.append((os.path.relpath(tj, root), tj,
                          base64.b64decode(entry["precompiled_charsmap"], validate=True)))

    ok = True
    for name, path, blob in cases:
        ok &= compare(name, driver, path, blob, texts)

    # malformed charsmaps: input errors naming the file (tokenizers refuses or panics on them too)
    good = blobs["nmt_nfkc"]
    trie_size = int.from_bytes(good[:4], "little")
    bad_cases = [
        ("too short", b"\x10\x00\x00", "shorter than its 4-byte"),
        ("empty", b"", "shorter than its 4-byte"),
        ("trie past the end", ((len(good) - 4) // 4 * 4 + 4).to_bytes(4, "little") + good[4:], "runs past"),
        ("empty trie", b"\x00\x00\x00\x00abc\x00", "empty trie"),
        ("unaligned trie size", (trie_size - 2).to_bytes(4, "little") + good[4:], "multiple of 4"),
        ("value past the pool", good[:4 + trie_size] + b"a\x00", "past the end"),
        ("pool not UTF-8", good + b"\xff\x00", "not valid UTF-8"),
    ]
    for label, blob, needle in bad_cases:
        path = os.path.join(work, "bad_" + label.replace(" ", "_") + ".bin")
        open(path, "wb").write(blob)
        ok &= expect_input_error(f"malformed charsmap: {label}", driver, path, needle)
    for label, b64, needle in [("bad base64 character", "AAAA!AAA", "invalid base64 character"),
                               ("bad base64 length", "AAAAA", "multiple of 4"),
                               ("base64 trailing bits", "AAB=", "trailing bits")]:
        path = os.path.join(work, "bad_" + label.replace(" ", "_") + ".json")
        json.dump({"normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Precompiled", "precompiled_charsmap": b64}]}}, open(path, "w"))
        ok &= expect_input_error(f"tokenizer.json with {label}", driver, path, needle)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
