#!/usr/bin/env python3
"""Compares omni::fix_text (lib/text/fix_text.cpp) with ftfy.fix_text, and omni::html_unescape with
html.unescape, on a generated corpus; exits 1 on any difference.

    tools/reference/.venv/bin/python tests/text/fix_text_check.py            # builds the driver with g++
    tools/reference/.venv/bin/python tests/text/fix_text_check.py --driver /tmp/fix_text_check

Needs the reference environment (ftfy 6.3.1); run with another Python it re-runs itself under
tools/reference/.venv/bin/python. The corpus is deterministic (seeded): prompt-style prose in many scripts,
emoji, combining marks, full-width forms, ligatures, control characters, line breaks, terminal escapes, HTML
entities, and mojibake of all of it in the encodings ftfy repairs (single, double, partial, lossy). Besides
fix_text it checks the parts ftfy exposes (is_bad, fix_encoding, unescape_html) on fuzzed text, which
catches a wrong heuristic even where fix_text's output happens to agree, and times fix_text on a 512-token
English prompt.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_PYTHON = os.path.join(ROOT, "tools", "reference", ".venv", "bin", "python")

try:
    import ftfy
    import ftfy.badness
    import ftfy.fixes
except ImportError:
    if os.path.exists(VENV_PYTHON) and os.path.realpath(sys.executable) != os.path.realpath(VENV_PYTHON):
        os.execv(VENV_PYTHON, [VENV_PYTHON] + sys.argv)
    raise

import html

NEGATIVE_ZH = (
    "色调艳丽，过曝，静态，细节模糊不清，字幕，风格，作品，画作，画面，静止，整体发灰，最差质量，低质量，JPEG压缩残留，"
    "丑陋的，残缺的，多余的手指，画得不好的手部，画得不好的脸部，畸形的，毁容的，形态畸形的肢体，手指融合，静止不动的画面，"
    "杂乱的背景，三条腿，背景人很多，倒着走"
)

ENGLISH = [
    "A cat playing piano in a dimly lit jazz club — slow motion, cinematic lighting.",
    "The girl’s red umbrella drifts over the “old bridge” at dusk…",
    "A close-up of a hummingbird’s wings; 4K, shallow depth of field, ‘dreamy’ bokeh.",
    "Two astronauts—one laughing, one silent—float past the café window.",
    "An old man walks his dog along the beach, waves crashing… It’s 5 o’clock.",
    "Drone shot: snow-capped mountains, a winding river, golden hour – breathtaking!",
    "“Don’t stop,” she whispered, as the train pulled away from the station.",
    "A robot chef flips pancakes; the kitchen is spotless — 24 fps, 1080p.",
    "Time-lapse of a city skyline (New York) from day to night, cars’ lights streaking.",
    "A fox in the snow… its breath visible in the cold air; soft natural light.",
    "Naïve art style: a coöperative of bees building a hive, résumé-style captions.",
    "Fish & chips on a newspaper, 50% off, price: £3.99 — €4.50 — ¥600.",
    "He said: ‘It’s fine’ — but it wasn’t. « Très bien », répondit-elle.",
    "Über-detailed macro of a dew drop on a leaf, f/2.8, ISO 100, 1/250s.",
    "A samurai stands in the rain; cherry blossoms fall ‒ ‐ ‑ ― dashes everywhere.",
]
CHINESE = [
    "一只猫在弹钢琴，“慢动作”，电影级光照。",
    "夕阳下的海边，一个女孩在奔跑，头发随风飘动。",
    "城市夜景，霓虹灯闪烁，雨后的街道倒映着灯光。",
    "一位老人在公园里打太极拳，清晨的阳光洒在他身上。",
    NEGATIVE_ZH,
    "「你好」，他说。『再见』——她回答。",
]
JAPANESE = [
    "桜の木の下で猫が眠っている、スローモーション。",
    "ｶﾀｶﾅのﾃｷｽﾄ、ﾊﾝｶｸｶﾀｶﾅ ｶﾞｷﾞｸﾞ ﾊﾟﾋﾟﾌﾟ。",
    "東京の夜景、ネオンが光る。「すごい！」と彼女は言った。",
    "ｺﾝﾋﾟｭｰﾀｰ　と　ＵＳＢ　ケーブル。",
]
OTHER = [
    "고양이가 피아노를 치고 있다, 슬로우 모션.",
    "Кошка играет на пианино в джаз-клубе — замедленная съёмка.",
    "«Ёлка» и «ёжик» — это русские слова.",
    "قطة تعزف على البيانو في نادي الجاز، حركة بطيئة.",
    "एक बिल्ली जैज़ क्लब में पियानो बजा रही है।",
    "Μια γάτα παίζει πιάνο — αργή κίνηση.",
    "Kedi caz kulübünde piyano çalıyor; ağır çekim, İstanbul’da.",
    "Kot gra na pianinie — zwolnione tempo, Łódź, żółć.",
    "Con mèo đang chơi đàn piano, chuyển động chậm.",
    "Ein Hund läuft über die Straße, schön grüß Gott.",
    "Le chat joue du piano à la française, déjà vu.",
    "El niño come piñata en España, ¿verdad? ¡Sí!",
    "שלום עולם, חתול מנגן בפסנתר.",
    "แมวกำลังเล่นเปียโน",
    "Čeština: příliš žluťoučký kůň úpěl ďábelské ódy.",
    "Svenska: ÅÄÖ åäö, Dansk: Ææ Øø.",
]
EMOJI = [
    "A family 👨‍👩‍👧‍👦 having a picnic 🧺 under a tree 🌳.",
    "Thumbs up 👍🏽 and waving 👋🏿, hearts ❤️ 💕.",
    "Flags: 🇯🇵 🇺🇸 🏴󠁧󠁢󠁷󠁬󠁳󠁿 and a rainbow 🏳️‍🌈.",
    "Technologist 👩🏻‍💻 with a cat 🐈‍⬛ ✨🎬🎥",
    "Keycap 1️⃣ 2️⃣ #️⃣ and ©️ ®️ ™️",
]
SPECIAL = [
    "Cafe\u0301 au lait, nai\u0308ve, A\u030a, n\u0303",
    "ＡＢＣ！ Ｆｕｌｌ－ｗｉｄｔｈ　ｔｅｘｔ？ （１２３）",
    "ﬁne ﬂowers, eﬀort, oﬃce, baﬄe, ﬅ ﬆ, Ĳssel, ǅ ǈ ǋ ǲ",
    "bell\x07 null\x00 tab\t formfeed\x0c vt\x0b del\x7f esc\x1b done",
    "bom\ufeff start, \u206a arabic \u206f, \ufff9anno\ufffb, obj\ufffc",
    "line1\r\nline2\rline3\u2028line4\u2029line5\x85line6\n",
    "\x1b[31mRed text\x1b[0m and \x1b[1;32;44mbold\x1b[m normal \x1b[99",
    "zero\u200bwidth\u200cjoin\u200d rtl\u200f \u202etext\u202c",
    "quotes: ‘a’ “b” ‛c‟ ʼd „e‚ «f» ‹g›",
    "math: x² + y³ = z¹ ½ ¼ ¾ × ÷ ± µ ° ‰ № ™",
    "\u00a0nbsp\u00a0here and soft\u00adhyphen",
    "micro µ and mu μ, ohm Ω and Ω, angstrom Å",
    "tabs\tand  double  spaces   and\u3000ideographic",
    "C1: \x80\x81\x8d\x8f\x90\x9d\x9f inside",
]
HTML_SNIPPETS = [
    "Fish &amp; chips &eacute;t&eacute; &check; &lt;b&gt;bold&lt;/b&gt;",
    "A <b>real</b> tag &amp; entity &eacute;",
    "&amp;amp; &amp;lt; double &amp;eacute;",
    "&AMP; &EACUTE; &NTILDE; &nTILDE; &SZLIG; &Eacute; &THORN; &thorn;",
    "&#39;single&#39; &#x2019;curly&#x2019; &#8212; &#x41; &#65;",
    "&#0; &#1; &#128; &#x80; &#150; &#x9d; &#55296; &#xD800; &#1114112; &#x110000;",
    "&#59; &#x3b; &#123abc; &#xZZ; &#abc; &#x; &# &#;",
    "&amp &lt &copy &eacute no semicolons &notit; &notin; &not",
    "&hellip;&mdash;&ndash;&rsquo;&lsquo;&rdquo;&ldquo;&nbsp;&shy;",
    "&Jscr;ohn &HilbertSpace;ancock &NotEqualTilde; &bne; &fjlig;",
    "&averyveryverylongentitynamethatexceedstwentyfour; &unknown; & alone",
    "&eacute<br>after a tag &eacute;",
    "&frac12; &FRAC12; &sup2; &SUP2; &macr; &MACR;",
    "&ETH; &eth; &ETH &eth &AElig; &aelig; &AELIG;",
    "tabs &\tamp; newline &\namp; &#x1F600; &#128512;",
]

ENCODINGS_SINGLE = ["latin-1", "windows-1252", "sloppy-windows-1252", "sloppy-windows-1251",
                    "sloppy-windows-1250", "sloppy-windows-1253", "sloppy-windows-1254", "sloppy-windows-1257",
                    "iso-8859-2", "macroman", "cp437", "windows-1251", "windows-1250", "cp850"]


def mojibake(text: str, enc: str, errors: str = "replace") -> str:
    return text.encode("utf-8").decode(enc, errors=errors)


def make_corpus(rng: random.Random) -> list:
    base = ENGLISH + CHINESE + JAPANESE + OTHER + EMOJI + SPECIAL
    corpus = list(base) + list(HTML_SNIPPETS)
    # HTML entities in multi-line texts: a '<' switches entity decoding off from its line on.
    for snip in HTML_SNIPPETS:
        other = rng.choice(HTML_SNIPPETS)
        corpus.append(snip + "\n" + other)
        corpus.append("no tag &eacute; here\n" + snip + "\n&amp; after")
        corpus.append("<p>first line</p>\n" + snip)
    # Mojibake of every base text in many encodings and error modes.
    for text in base:
        for enc in ENCODINGS_SINGLE:
            for errors in ("replace", "ignore"):
                try:
                    corpus.append(mojibake(text, enc, errors))
                except LookupError:
                    pass
        m = mojibake(text, "sloppy-windows-1252")
        corpus.append(mojibake(m, "sloppy-windows-1252"))  # doubled
        corpus.append(mojibake(mojibake(text, "latin-1"), "latin-1"))
        corpus.append(mojibake(text, "windows-1252", "replace").replace("\ufffd", "?"))
        corpus.append(m.replace("\xa0", " "))  # non-breaking spaces flattened to spaces
        corpus.append(mojibake(text, "windows-1252", "replace"))
    # Partial mojibake: good text with mojibake fragments inside, and mixtures across lines.
    for _ in range(300):
        a, b = rng.choice(base), rng.choice(base)
        enc = rng.choice(["sloppy-windows-1252", "latin-1", "sloppy-windows-1251", "macroman", "cp437"])
        cut = rng.randrange(len(b) + 1)
        piece = mojibake(b[:cut], enc)
        mode = rng.randrange(5)
        if mode == 0:
            corpus.append(a + " " + piece)
        elif mode == 1:
            corpus.append(piece + "\n" + a)
        elif mode == 2:
            corpus.append(a[: len(a) // 2] + piece + a[len(a) // 2:])
        elif mode == 3:
            corpus.append(mojibake(a, enc) + " " + b)
        else:
            corpus.append(piece + rng.choice(["\r\n", "\u2028", "\n", " "]) + mojibake(a, "sloppy-windows-1252"))
    # Random mixes of the base texts with the special pieces.
    for _ in range(300):
        parts = [rng.choice(base + HTML_SNIPPETS) for _ in range(rng.randint(2, 4))]
        sep = rng.choice([" ", "\n", "\r\n", "", " — "])
        text = sep.join(parts)
        if rng.random() < 0.3:
            text = mojibake(text, rng.choice(["sloppy-windows-1252", "latin-1"]))
        corpus.append(text)
    # Character soup from the alphabet of mojibake, to exercise the heuristics.
    corpus += fuzz_strings(rng, 400, 1, 12)
    # A few specific cases from ftfy's documentation and edge cases of the codecs.
    corpus += [
        "cafÃ©", "â€œquotedâ€\x9d", "Ã¼ber", "âœ” No problems", "&macr;\\_(ã\x83\x84)_/&macr;",
        "voilÃ le travail", "sÃ³", "Ã la mode", "fÃ cil", "Ã s vezes", "Ã quele", "P&EACUTE;REZ",
        "â€œ like this â€\ufffd", "â€œ like this â€?", "Ã\n", "Ã€\n", "À\n", "caf\xc3\xa9\xc0\n",
        "í ½í¸€", "\xed\xa0\xbd\xed\xb8\x80", "\xc0\x80", "Ã\x80", "\u0080\u0081\u009d",
        "", " ", "\n", "\n\n", "a", "<", "&", "&amp;", "Ã", "Â ", "Â\xa0", "x Â ", "ÃƒÂ©",
        "ГўВЂВ™s", "вЂ™", "β€™", "ā€ś", "‚Äôs", "√©", "≈°", "ØªØ", "Ø³Ù„Ø§Ù…",
        "Ã©\r\nÃ©\r\n", "\x1b[31;1mÃ©\x1b[0m", "ï»¿BOM mojibake", "\ufeffBOM",
    ]
    return corpus


FUZZ_ALPHABET = (
    [chr(c) for c in range(0x20, 0x7F)] * 2
    + [chr(c) for c in range(0x80, 0x100)]
    + list("€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ")
    + list("ВГРСвЂўЃЉЊЋЌЎЏђѓєѕіїјљњћќўџҐґ")
    + list("ΒΓΞΟβΆΈΉΊΌΎΏΐαάέήίΰ")
    + list("āĀčČęĘėĖģĢīĪķĶļĻņŅōŌŗŖšŠūŪųŲžŽźŹżŻłŁńŃśŚćĆőŐűŰůŮťŤďĎňŇřŘľĽĺĹŕŔăĂşŞţŢğĞİı")
    + list("│┌┐┘├┤┬┼═║╒╓╔╕╖╗╘╙╚╛╜╝╞╟╠╡╢╣╤╥╦╧╨╩╪╫╬▀▄█▌▐░▒▓")
    + list("√±∂†≠®™´≤≥¥µø≈°¢πΩ∑∏∫◊ﬁﬂ\uf8ff")
    + list("\xa0 \t\n\r\u2028\ufffd?")
)


def fuzz_strings(rng: random.Random, count: int, lo: int, hi: int) -> list:
    return ["".join(rng.choice(FUZZ_ALPHABET) for _ in range(rng.randint(lo, hi))) for _ in range(count)]


def run_driver(driver: str, mode: str, texts: list, extra=()) -> list:
    data = "".join(json.dumps(t, ensure_ascii=True) + "\n" for t in texts)
    proc = subprocess.run([driver, mode, *extra], input=data.encode("ascii"), capture_output=True, check=True)
    return [json.loads(line) for line in proc.stdout.decode("utf-8").splitlines()]


def compare(name: str, texts: list, expected: list, got: list) -> int:
    bad = 0
    if len(got) != len(expected):
        print(f"{name}: driver returned {len(got)} results for {len(expected)} inputs")
        return max(1, len(expected))
    for text, want, have in zip(texts, expected, got):
        if want != have:
            bad += 1
            if bad <= 10:
                print(f"MISMATCH {name}: input {text!r}\n   ftfy {want!r}\n   ours {have!r}")
    print(f"{name}: {len(texts)} texts, {bad} mismatches")
    return bad


def build_driver() -> str:
    out_dir = tempfile.mkdtemp(prefix="fix_text_check.")
    exe = os.path.join(out_dir, "fix_text_check")
    lib = os.path.join(ROOT, "lib")
    cmd = ["g++", "-std=c++17", "-O2", "-I" + lib, os.path.join(ROOT, "tests", "text", "fix_text_check.cpp"),
           *(os.path.join(lib, "text", f + ".cpp") for f in ("fix_text", "fix_encoding", "html_unescape", "utf8")),
           "-o", exe, "-licuuc"]
    print(" ".join(cmd))
    subprocess.run(cmd, check=True)
    return exe


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--driver", help="a built tests/text/fix_text_check (default: build one with g++)")
    parser.add_argument("--seed", type=int, default=20250601)
    args = parser.parse_args()
    driver = args.driver or build_driver()
    rng = random.Random(args.seed)

    corpus = make_corpus(rng)
    mismatches = compare("fix_text", corpus, [ftfy.fix_text(t) for t in corpus], run_driver(driver, "fix_text", corpus))

    fuzz = fuzz_strings(rng, 3000, 1, 8) + corpus
    mismatches += compare("is_bad", fuzz, [ftfy.badness.is_bad(t) for t in fuzz], run_driver(driver, "is_bad", fuzz))
    mismatches += compare("fix_encoding", fuzz, [ftfy.fix_encoding(t) for t in fuzz],
                          run_driver(driver, "fix_encoding", fuzz))

    entity_texts = list(HTML_SNIPPETS) + [
        "&" + name for name in sorted(html.entities.html5)] + [
        "&" + name.upper() for name in sorted(html.entities.html5)] + [
        f"&#{n};" for n in list(range(0, 300)) + [0xD800, 0xFFFE, 0x10FFFF, 0x110000, 10**30]] + [
        f"&#x{n:x}" for n in range(0x70, 0xA5)] + [
        "".join(rng.choice("&#;xX0123456789abcdefAEIOUamplt ;<\n\t") for _ in range(rng.randint(1, 20)))
        for _ in range(1500)]
    mismatches += compare("unescape_html", entity_texts, [ftfy.fixes.unescape_html(t) for t in entity_texts],
                          run_driver(driver, "unescape_html", entity_texts))
    mismatches += compare("html_unescape", entity_texts, [html.unescape(t) for t in entity_texts],
                          run_driver(driver, "html_unescape", entity_texts))

    words = ("A cinematic shot of a golden retriever running through a field of sunflowers — the camera "
             "follows at low height, petals drifting in the warm light; it’s a “perfect” summer afternoon… ").split()
    prompt = " ".join(words[i % len(words)] for i in range(420))  # about 512 UMT5 tokens
    timing = subprocess.run([driver, "bench", "200"], input=(json.dumps(prompt) + "\n").encode("ascii"),
                            capture_output=True, check=True).stdout.decode().strip()
    print(f"timing, {len(prompt)}-character English prompt: {timing}")

    print("OK" if mismatches == 0 else f"FAILED: {mismatches} mismatches")
    return 0 if mismatches == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
