#!/usr/bin/env bash
# The real google/umt5-xxl tokenizer.json (the vocabulary of every Wan2.x text encoder), and the two tokenizer
# folders tests/e2e/text/text_corpus.sh tokenizes the multilingual corpus with.
#   umt5_vocab.sh DEST_DIR [VENV]        (VENV: $REFERENCE_VENV, else tools/reference/.venv)
# DEST_DIR gets:
#   tokenizer.json, tokenizer.json.sha256  the umt5-xxl tokenizer.json (Unigram, 256300 pieces, unk_id 3), taken
#                                          from the PyPI sdist of stable-diffusion-cpp-python 0.4.7, which vendors
#                                          stable-diffusion.cpp's src/tokenizers/vocab/umt5.hpp: the file as a C
#                                          byte array. The sdist's sha256 and the result's sha256 are pinned.
#   umt5/                                  tokenizer.json + tokenizer_config.json + special_tokens_map.json as the
#                                          published Wan2.2-T2V-A14B-Diffusers tokenizer folder has them
#                                          (published_configs.py; added_tokens_decoder from umt5's own ids).
#   converted/                             a folder transformers writes from a SentencePiece model: spiece.model
#                                          trained here (multilingual text of text_corpus.py, vocab ~8000, nmt_nfkc,
#                                          byte_fallback off, pad 0 eos 1 unk 2), converted and save_pretrained.
#   converted.spiece.model                 that model (not part of the folder: transformers 5 does not save it).
# Quick (a hash comparison) when DEST_DIR already holds what this version of the script makes.
# Source of the sdist: the simple index at $PIP_INDEX_URL (default https://pypi.org/simple), or a local copy
# named by $UMT5_SDIST (its sha256 is checked all the same).
set -euo pipefail
dest=${1:?usage: umt5_vocab.sh DEST_DIR [VENV]}
here=$(cd "$(dirname "$0")" && pwd)
venv=${REFERENCE_VENV:-${2:-$here/.venv}}
[ -x "$venv/bin/python" ] || { echo "FAIL: no reference environment at $venv (tools/reference/setup.sh makes it)"; exit 1; }
mkdir -p "$dest"
dest=$(cd "$dest" && pwd)

# What this run would make: the script, the corpus generator and the environment's versions.
stamp_want=$(cat "$0" "$here/text_corpus.py" "$here/published_configs.py" "$venv/pip-freeze.txt" 2>/dev/null | sha256sum | cut -d' ' -f1)
if [ -f "$dest/.stamp" ] && [ "$(cat "$dest/.stamp")" = "$stamp_want" ] && (cd "$dest" && sha256sum --quiet -c tokenizer.json.sha256) \
   && [ -f "$dest/umt5/tokenizer_config.json" ] && [ -f "$dest/converted/tokenizer.json" ]; then
  exit 0
fi
rm -f "$dest/.stamp"

"$venv/bin/python" - "$dest" "$here" <<'PY'
import hashlib, html.parser, io, json, os, re, shutil, sys, tarfile, tempfile, urllib.parse, urllib.request

dest, here = sys.argv[1], sys.argv[2]
SDIST = "stable_diffusion_cpp_python-0.4.7.tar.gz"
SDIST_SHA256 = "998d1957260dd5ae4e18a8acc0c14b0a8757aaa9f96515197b6d5bbf46df9282"
MEMBER = "stable_diffusion_cpp_python-0.4.7/vendor/stable-diffusion.cpp/src/tokenizers/vocab/umt5.hpp"
TOKENIZER_SHA256 = "24568697871e6c50515a706cb0c62d059738bb4a903054abd1fc9db78a2eddd7"


def fail(msg):
    print(f"FAIL: umt5_vocab: {msg}")
    sys.exit(1)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def sdist_url():
    index = os.environ.get("PIP_INDEX_URL", "https://pypi.org/simple").rstrip("/") + "/stable-diffusion-cpp-python/"
    with urllib.request.urlopen(urllib.request.Request(index, headers={"Accept": "text/html"}), timeout=60) as r:
        page = r.read().decode("utf-8", "replace")

    class Links(html.parser.HTMLParser):
        hrefs = []

        def handle_starttag(self, tag, attrs):
            if tag == "a":
                self.hrefs += [v for k, v in attrs if k == "href" and v]

    p = Links()
    p.feed(page)
    for href in p.hrefs:
        url = urllib.parse.urljoin(index, href)
        if urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1] == SDIST:
            return url
    fail(f"{SDIST} is not listed at {index}")


def tokenizer_json():
    """The bytes of umt5.hpp's array, from the verified sdist."""
    local = os.environ.get("UMT5_SDIST")
    tmp = None
    if local:
        path = local
    else:
        url = sdist_url()
        fd, tmp = tempfile.mkstemp(prefix="sdist-", suffix=".tar.gz", dir=dest)
        with os.fdopen(fd, "wb") as out, urllib.request.urlopen(url, timeout=300) as r:
            shutil.copyfileobj(r, out, 1 << 20)
        path = tmp
    try:
        got = sha256_file(path)
        if got != SDIST_SHA256:
            fail(f"{SDIST} from {local or url} has sha256 {got}, expected {SDIST_SHA256}: refusing it")
        with tarfile.open(path, "r:gz") as tar:
            try:
                f = tar.extractfile(MEMBER)  # read in memory: nothing of the archive lands on disk
            except KeyError:
                f = None
            if f is None:
                fail(f"{SDIST} has no {MEMBER}")
            src = f.read()
    finally:
        if tmp:
            os.unlink(tmp)
    m = re.fullmatch(rb"\s*static const unsigned char umt5_tokenizer_json_str\[\] = \{([0-9a-fx,\s]*)\};\s*", src)
    if not m:
        fail(f"{MEMBER} is not one `static const unsigned char umt5_tokenizer_json_str[] = {{ 0x.., ... }};`")
    body = m.group(1)
    if not re.fullmatch(rb"(\s*0x[0-9a-f]{2},)*\s*(0x[0-9a-f]{2}\s*)?", body):
        fail(f"{MEMBER}: an element of the array is not one 0xNN byte")
    return bytes.fromhex(body.replace(b"0x", b"").replace(b",", b"").decode("ascii"))


have = os.path.join(dest, "tokenizer.json")
if os.path.exists(have) and sha256_file(have) == TOKENIZER_SHA256:
    with open(have, "rb") as f:  # already made: no download
        data = f.read()
else:
    data = tokenizer_json()
got = hashlib.sha256(data).hexdigest()
try:
    j = json.loads(data.decode("utf-8"))
except ValueError as e:
    fail(f"the array of {MEMBER} is not UTF-8 JSON: {e}")
model = j.get("model", {})
checks = {"model.type": (model.get("type"), "Unigram"), "pieces": (len(model.get("vocab", [])), 256300),
          "model.unk_id": (model.get("unk_id"), 3), "model.byte_fallback": (model.get("byte_fallback"), False),
          "piece 3": (model.get("vocab", [[None]] * 4)[3][0], "<unk>")}
for what, (have, want) in checks.items():
    if have != want:
        fail(f"umt5 tokenizer.json: {what} is {have!r}, expected {want!r}")
if got != TOKENIZER_SHA256:
    fail(f"umt5 tokenizer.json has sha256 {got}, expected {TOKENIZER_SHA256}")
with open(os.path.join(dest, "tokenizer.json"), "wb") as f:
    f.write(data)
with open(os.path.join(dest, "tokenizer.json.sha256"), "w") as f:
    f.write(f"{got}  tokenizer.json\n")
print(f"umt5_vocab: tokenizer.json {got} ({len(data)} bytes, {len(model['vocab'])} pieces)")

# --- converted/: a SentencePiece model trained on multilingual text, converted by transformers ---------------
import sentencepiece as spm
sys.path.insert(0, here)
from text_corpus import training_sentences
from published_configs import published_tokenizer_files

work = tempfile.mkdtemp(prefix="spm-", dir=dest)
try:
    train = os.path.join(work, "train.txt")
    with open(train, "w", encoding="utf-8") as f:
        f.write("\n".join(training_sentences()) + "\n")
    prefix = os.path.join(work, "spiece")
    spm.SentencePieceTrainer.train(
        input=train, model_prefix=prefix, model_type="unigram", vocab_size=8000, hard_vocab_limit=False,
        character_coverage=0.9995, byte_fallback=False, normalization_rule_name="nmt_nfkc",
        pad_id=0, eos_id=1, unk_id=2, bos_id=-1, num_threads=2, seed_sentencepiece_size=200000,
        input_sentence_size=0, shuffle_input_sentence=False, minloglevel=2)
    spiece = os.path.join(dest, "converted.spiece.model")
    shutil.copy(prefix + ".model", spiece)
finally:
    shutil.rmtree(work)
sp = spm.SentencePieceProcessor(model_file=spiece)
if (sp.pad_id(), sp.eos_id(), sp.unk_id()) != (0, 1, 2) or sp.id_to_piece(2) != "<unk>":
    fail(f"trained spiece.model: pad/eos/unk ids {(sp.pad_id(), sp.eos_id(), sp.unk_id())}, expected (0, 1, 2)")

from transformers import AutoTokenizer, T5TokenizerFast

conv = os.path.join(dest, "converted")
shutil.rmtree(conv, ignore_errors=True)
# transformers 5.17: T5TokenizerFast is T5Tokenizer (the tokenizers backend), and its __init__ has no
# vocab_file: T5TokenizerFast(vocab_file=spiece, extra_ids=N) silently builds a vocabulary of the special tokens
# alone (<pad> </s> <unk> ▁ and the extra ids). The conversion transformers does is from_pretrained on a folder
# holding spiece.model (SentencePieceExtractor: pieces, scores, the precompiled charsmap). Refuse the first if it
# ever starts reading the file (then this comment is stale), and use the second.
direct = T5TokenizerFast(vocab_file=spiece, extra_ids=100)
if len(direct) > 4 + 100:
    fail("T5TokenizerFast(vocab_file=...) now reads the SentencePiece model: use it as the conversion")
src = tempfile.mkdtemp(prefix="spm-src-", dir=dest)
try:
    shutil.copy(spiece, os.path.join(src, "spiece.model"))
    with open(os.path.join(src, "tokenizer_config.json"), "w") as f:
        json.dump({"tokenizer_class": "T5TokenizerFast", "extra_ids": 100, "eos_token": "</s>",
                   "unk_token": "<unk>", "pad_token": "<pad>"}, f)
    tok = AutoTokenizer.from_pretrained(src)
    tok.save_pretrained(conv)
finally:
    shutil.rmtree(src)
with open(os.path.join(conv, "tokenizer.json"), encoding="utf-8") as f:
    cj = json.load(f)
vocab = cj["model"]["vocab"]
pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
if [v[0] for v in vocab[:len(pieces)]] != pieces:
    fail("converted/tokenizer.json: the pieces are not the SentencePiece model's, in its order")
unk = [i for i, v in enumerate(vocab) if v[0] == "<unk>"]
# transformers 5's T5Tokenizer writes unk_id 2 whatever the model says (tokenization_t5.py: Unigram(...,
# unk_id=2)); here <unk> is id 2, so the file is right. A model whose <unk> is elsewhere (umt5: 3) would get a
# wrong unk_id: refuse rather than hand the reference a tokenizer that maps unknown text to another piece.
if cj["model"]["unk_id"] != sp.unk_id() or unk != [sp.unk_id()]:
    fail(f"converted/tokenizer.json: unk_id {cj['model']['unk_id']} but <unk> is id {unk}: refusing it")
if cj["model"].get("byte_fallback"):
    fail("converted/tokenizer.json: byte_fallback is on")
norm = json.dumps(cj.get("normalizer"))
if "Precompiled" not in norm:
    fail(f"converted/tokenizer.json: no Precompiled (nmt_nfkc) normalizer: {norm[:200]}")
print(f"umt5_vocab: converted/ {len(vocab)} pieces ({len(pieces)} from spiece.model), unk_id {cj['model']['unk_id']}")

# --- umt5/: the published Wan2.2-T2V-A14B-Diffusers tokenizer folder ------------------------------------------
u = os.path.join(dest, "umt5")
shutil.rmtree(u, ignore_errors=True)
os.makedirs(u)
shutil.copy(os.path.join(dest, "tokenizer.json"), os.path.join(u, "tokenizer.json"))
tc, stm = published_tokenizer_files(spiece)  # the keys and values transformers 4.x writes for UMT5 ...


def added(t):
    return {k: t[k] for k in ("content", "lstrip", "normalized", "rstrip", "single_word", "special")}


# ... with umt5's ids: <pad> 0, </s> 1, <s> 2, <unk> 3 and <extra_id_299..0> 256000..256299 (a spiece.model of
# 256000 pieces, <s> among them; the 300 extra ids appended in reverse).
tc["added_tokens_decoder"] = {str(t["id"]): added(t) for t in j["added_tokens"]}
want = {0: "<pad>", 1: "</s>", 2: "<s>", 3: "<unk>", **{256299 - i: f"<extra_id_{i}>" for i in range(300)}}
if {int(k): v["content"] for k, v in tc["added_tokens_decoder"].items()} != want:
    fail("umt5 tokenizer.json: added_tokens are not <pad> </s> <s> <unk> and <extra_id_299..0> at 256000..256299")
with open(os.path.join(u, "tokenizer_config.json"), "w") as f:
    json.dump(tc, f, indent=2)
with open(os.path.join(u, "special_tokens_map.json"), "w") as f:
    json.dump(stm, f, indent=2)
PY
echo "$stamp_want" > "$dest/.stamp"
