#!/usr/bin/env bash
# Regression comparison of two whole runs (omni-compare RUN_A RUN_B), on runs the tool itself makes: a golden
# run of a JSON Lines list on one rank, and a second run of the same list with one prompt changed, one seed
# changed, one video renamed, one with fewer steps, one on another layout (2 ranks, CFG parallel), one made
# only by the new run, then one video deleted and one corrupted. Checks every verdict, the settings diff, the
# JSON, the JUnit XML, the profiles, a renumbered list, the model's files from a Hugging Face cache, videos
# without sidecars (sizes and frame counts that differ), the bad-input contract, LPIPS through the flag, and the
# HTML report in headless Chromium (it loads every image and video with no console error, and its summary table
# equals the JSON).
#   runs.sh OMNI_GENERATE OMNI_COMPARE WORK_DIR REFERENCE_VENV
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
set -uo pipefail
gen=$1 cmp=$2 work=$3 venv=$4
rm -rf "$work" && mkdir -p "$work/golden" "$work/new" && cd "$work" || exit 1
# float32, so that another layout gives the same frames (docs/comparisons.md).
small=(--height 96 --width 96 --num-frames 9 --num-inference-steps 4 --max-sequence-length 24 --dtype float32)

cat > golden.jsonl <<'J'
{"prompt": "A red fox runs through the snow", "seed": 1, "output": "golden/fox.mp4"}
{"prompt": "A boat on a lake at dawn", "seed": 2, "output": "golden/boat.mp4"}
{"prompt": "A city street at night, neon signs", "seed": 3, "output": "golden/city.mp4"}
{"prompt": "Waves roll onto a sandy beach", "seed": 4, "output": "golden/waves.mp4"}
{"prompt": "Un chat saute sur le piano", "seed": 5, "output": "golden/cat.mp4"}
{"prompt": "紅葉の森を歩く人", "seed": 6, "output": "golden/forest.mp4"}
{"prompt": "A hot air balloon over fields", "seed": 7, "output": "golden/balloon.mp4"}
J
# The new run: fox renamed (paired by prompt and seed), boat's prompt and city's seed changed, balloon with
# fewer steps (a regression: same video, other frames), forest on 2 ranks below.
cat > new.jsonl <<'J'
{"prompt": "A red fox runs through the snow", "seed": 1, "output": "new/fox-renamed.mp4"}
{"prompt": "A boat on a river at dusk", "seed": 2, "output": "new/boat.mp4"}
{"prompt": "A city street at night, neon signs", "seed": 33, "output": "new/city.mp4"}
{"prompt": "Waves roll onto a sandy beach", "seed": 4, "output": "new/waves.mp4"}
{"prompt": "Un chat saute sur le piano", "seed": 5, "output": "new/cat.mp4"}
{"prompt": "A lighthouse in a storm", "seed": 8, "output": "new/lighthouse.mp4"}
J
echo '{"prompt": "A hot air balloon over fields", "seed": 7, "output": "new/balloon.mp4"}' > balloon.jsonl
echo '{"prompt": "紅葉の森を歩く人", "seed": 6, "output": "new/forest.mp4"}' > forest.jsonl

"$gen" --prompts-file golden.jsonl "${small[@]}" --save-tensors golden/t.safetensors --log-level warn ||
  fail "the golden run"
"$gen" --prompts-file new.jsonl "${small[@]}" --save-tensors new/t.safetensors --log-level warn || fail "the new run"
"$gen" --prompts-file balloon.jsonl "${small[@]}" --num-inference-steps 2 --save-tensors new/b.safetensors \
  --log-level warn || fail "the new run's balloon"
mpi -t 300 2 "$gen" --prompts-file forest.jsonl "${small[@]}" --cfg-parallel-size 2 \
  --save-tensors new/f.safetensors --log-level warn || fail "the new run's forest on 2 ranks"
rm new/waves.mp4 new/waves.mp4.json                 # deleted
head -c 3000 /dev/urandom > new/cat.mp4             # corrupted (its sidecar kept)

# --- the comparison -----------------------------------------------------------------------------------------
out=$("$cmp" new golden --report report --json report.json --junit report.xml 2>&1)
rc=$?
echo "$out"
[ "$rc" = 1 ] && pass "exit 1 with regressions" || flunk "exit $rc, want 1"
for f in report.json report.xml report/index.html; do [ -s "$f" ] || fail "$f not written"; done

"$venv/bin/python" - report.json report.xml <<'PY' && pass "verdicts, settings diff, JSON and JUnit" || flunk "verdicts, settings diff, JSON and JUnit"
import json, sys, xml.etree.ElementTree as ET
j = json.load(open(sys.argv[1]))
by = {p["name"]: p for p in j["pairs"]}
errors = []
def want(cond, what):
    if not cond: errors.append(what)
want(set(by) == {"fox.mp4", "boat.mp4", "city.mp4", "waves.mp4", "cat.mp4", "forest.mp4", "balloon.mp4",
                 "lighthouse.mp4"}, f"pairs {sorted(by)}")
v = {k: p["verdict"] for k, p in by.items()}
want(v == {"fox.mp4": "pass", "boat.mp4": "not comparable", "city.mp4": "not comparable", "waves.mp4": "missing",
           "cat.mp4": "failed", "forest.mp4": "pass", "balloon.mp4": "regression", "lighthouse.mp4": "new"}, f"verdicts {v}")
want(j["counts"] == {"pass": 2, "regression": 1, "failed": 1, "not comparable": 2, "missing": 1, "new": 1}, j["counts"])
want(j["passed"] is False, "passed")
# fox: paired by prompt and seed, the same build and layout in another process: bit-equal latents, and the
# same MP4 frames (the same frames encode to the same bytes: lib/io/video_writer.cpp, SameBytesFromAllocations).
fox = by["fox.mp4"]
want(fox["paired_by"] == "prompt and seed" and fox["a"]["name"] == "fox-renamed.mp4", fox["paired_by"])
want(fox["metrics"]["min_psnr"] == "inf" and fox["metrics"]["max_abs"] == 0, fox["metrics"])
want(fox["latents"]["cosine"] is not None and abs(fox["latents"]["cosine"] - 1) < 1e-12 and fox["latents"]["max_abs"] == 0, fox["latents"])
want(fox["settings_diff"] == [], fox["settings_diff"])
want(len(fox["frames"]) == 9 and all(f["psnr"] == "inf" for f in fox["frames"]), "fox frames")
want(by["forest.mp4"]["metrics"]["max_abs"] == 0, ("forest: float32 on 2 ranks gives one rank's frames", by["forest.mp4"]["metrics"]))
# boat / city: the sidecars say another video; nothing measured.
keys = lambda p: sorted(d["key"] for d in p["settings_diff"])
want("prompt" in keys(by["boat.mp4"]) and "settings.prompt" in keys(by["boat.mp4"]), keys(by["boat.mp4"]))
want(any("prompt" in r for r in by["boat.mp4"]["reasons"]) and by["boat.mp4"]["frames"] == [], by["boat.mp4"]["reasons"])
want("settings.seed" in keys(by["city.mp4"]) and by["city.mp4"]["frames"] == [], keys(by["city.mp4"]))
d = {x["key"]: x for x in by["city.mp4"]["settings_diff"]}
want(d["settings.seed"]["a"] == 33 and d["settings.seed"]["b"] == 3, d.get("settings.seed"))
# waves: deleted; cat: corrupted, with the reason.
want(by["waves.mp4"]["fails"] and by["waves.mp4"]["a"]["path"] == "", by["waves.mp4"])
want(by["cat.mp4"]["a"]["decodes"] is False and any(r.startswith("A does not decode") for r in by["cat.mp4"]["reasons"]), by["cat.mp4"]["reasons"])
# balloon: fewer steps: listed, and its frames fail the kernel profile's gates.
want(keys(by["balloon.mp4"]) == ["settings.num-inference-steps"], keys(by["balloon.mp4"]))
want(any(r.startswith("min PSNR") for r in by["balloon.mp4"]["reasons"]), by["balloon.mp4"]["reasons"])
# forest: another layout (cfg 2 on 2 ranks): listed, and within the kernel profile.
fk = keys(by["forest.mp4"])
want("layout" in fk and "settings.cfg-parallel-size" in fk and "prompt" not in fk, fk)
want(by["forest.mp4"]["latents"]["cosine"] > 0.9999, by["forest.mp4"]["latents"])
want(by["lighthouse.mp4"]["b"]["path"] == "" and not by["lighthouse.mp4"]["fails"], by["lighthouse.mp4"])
# Worst first: failed, regression, missing, not comparable x2, new, then the passes.
order = [p["verdict"] for p in j["pairs"]]
want(order == ["failed", "regression", "missing", "not comparable", "not comparable", "new", "pass", "pass"], order)
# JUnit: one test case per pair; regression and missing fail, the corrupted video errs, the rest skip or pass.
root = ET.parse(sys.argv[2]).getroot()
suite = root.find("testsuite")
cases = {c.get("name"): c for c in suite.findall("testcase")}
want(set(cases) == set(by), sorted(cases))
want((suite.get("tests"), suite.get("failures"), suite.get("errors"), suite.get("skipped")) == ("8", "2", "1", "3"),
     suite.attrib)
want(cases["balloon.mp4"].find("failure") is not None and cases["waves.mp4"].find("failure") is not None, "failures")
want(cases["cat.mp4"].find("error") is not None, "error")
want(all(cases[n].find("skipped") is not None for n in ["boat.mp4", "city.mp4", "lighthouse.mp4"]), "skipped")
want(all(list(cases[n]) and cases[n].find("failure") is None and cases[n].find("skipped") is None for n in ["fox.mp4", "forest.mp4"]), "passes")
for e in errors: print("  mismatch:", e)
sys.exit(1 if errors else 0)
PY

# --- profiles and thresholds ------------------------------------------------------------------------------
"$cmp" golden golden --profile exact > exact.txt 2>&1 && grep -q "PASS: 7 videos, 7 pass" exact.txt &&
  pass "a run against itself passes --profile exact" || { flunk "golden vs golden, exact"; cat exact.txt; }
# The fox encoded at --crf 17 instead of 18: the same video a little differently encoded fails exact, passes
# kernel, and the settings diff names the crf.
mkdir -p crf && echo '{"prompt": "A red fox runs through the snow", "seed": 1, "output": "crf/fox.mp4"}' > crf.jsonl &&
  "$gen" --prompts-file crf.jsonl "${small[@]}" --crf 17 --log-level warn || fail "the crf run"
mkdir -p fox && ln -sf ../golden/fox.mp4 fox/fox.mp4 && ln -sf ../golden/fox.mp4.json fox/fox.mp4.json
"$cmp" crf fox --profile exact --json crf-exact.json > crf.txt 2>&1
c1=$?
"$cmp" crf fox --json crf-kernel.json >> crf.txt 2>&1
c2=$?
"$venv/bin/python" -c "
import json
e = json.load(open('crf-exact.json'))['pairs'][0]; k = json.load(open('crf-kernel.json'))['pairs'][0]
assert e['verdict'] == 'regression' and e['reasons'][0].startswith('max abs difference'), e['reasons']
assert k['verdict'] == 'pass' and 0 < k['metrics']['max_mad'] < 10, k['metrics']
assert [d['key'] for d in k['settings_diff']] == ['settings.crf'], k['settings_diff']
" && [ "$c1" = 1 ] && [ "$c2" = 0 ] && pass "another crf: exact fails (exit $c1), kernel passes (exit $c2)" ||
  { flunk "another crf: exit $c1 / $c2"; cat crf.txt; }
# A list with a line inserted at the top: its videos are numbered by position (video-0000.mp4, ...), so each
# name now holds another prompt; the pairs follow the prompts and seeds, the inserted one is new.
printf '%s\n' '{"prompt": "A red fox runs through the snow", "seed": 1}' '{"prompt": "A boat on a lake at dawn", "seed": 2}' > num-a.jsonl
{ echo '{"prompt": "A lighthouse in a storm", "seed": 8}'; cat num-a.jsonl; } > num-b.jsonl
mkdir -p num-golden num-new
"$gen" --prompts-file num-a.jsonl "${small[@]}" --num-inference-steps 2 --output num-golden/video.mp4 --log-level warn &&
  "$gen" --prompts-file num-b.jsonl "${small[@]}" --num-inference-steps 2 --output num-new/video.mp4 --log-level warn ||
  fail "the numbered runs"
"$cmp" num-new num-golden --profile exact --json num.json > num.txt 2>&1
c=$?
"$venv/bin/python" -c "
import json; j = json.load(open('num.json')); p = {(x['a']['name'], x['b']['name']): (x['verdict'], x['paired_by']) for x in j['pairs']}
want = {('video-0001.mp4', 'video-0000.mp4'): ('pass', 'prompt and seed'), ('video-0002.mp4', 'video-0001.mp4'): ('pass', 'prompt and seed'),
        ('video-0000.mp4', ''): ('new', None)}
assert p == want, p
" && [ "$c" = 0 ] && pass "an inserted line: pairs by prompt and seed (exit $c)" || { flunk "an inserted line (exit $c)"; cat num.txt; }
# The same weights from a Hugging Face cache snapshot (its files link to blobs named by their SHA-256): the
# sidecar records each file's SHA-256 and size, and the comparison lists the model's files as a difference
# (the golden run read the same bytes from another folder) while the latents stay equal.
"$venv/bin/python" - "$(sed -n 's/^  "model": "\(.*\)",$/\1/p' golden/fox.mp4.json)" hub <<'PY2' || fail "the hub layout"
import hashlib, os, shutil, sys
src, hub = sys.argv[1], sys.argv[2]
snap = os.path.join(hub, "models--test--tiny", "snapshots", "r1")
blobs = os.path.join(hub, "models--test--tiny", "blobs")
os.makedirs(blobs)
for root, _, files in os.walk(src):
    for f in files:
        rel = os.path.relpath(os.path.join(root, f), src)
        dst = os.path.join(snap, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if f.endswith(".safetensors"):
            data = open(os.path.join(root, f), "rb").read()
            sha = hashlib.sha256(data).hexdigest()
            open(os.path.join(blobs, sha), "wb").write(data)
            os.symlink(os.path.relpath(os.path.join(blobs, sha), os.path.dirname(dst)), dst)
        else:
            shutil.copy(os.path.join(root, f), dst)
PY2
mkdir -p hubrun && echo '{"prompt": "A red fox runs through the snow", "seed": 1, "output": "hubrun/fox.mp4"}' > hub.jsonl &&
  "$gen" --model hub/models--test--tiny/snapshots/r1 --prompts-file hub.jsonl "${small[@]}" \
    --negative-prompt "blurry, low quality, static" --fps 8 --save-tensors hubrun/t.safetensors --log-level warn ||
  fail "the run from the hub cache"  # (a folder given by --model gets its preset: the built-in model's settings)
"$cmp" hubrun fox --json hub.json > hub.txt 2>&1
c=$?
"$venv/bin/python" - hubrun/fox.mp4.json hub.json <<'PY2' && [ "$c" = 0 ] && pass "model files: SHA-256 from the hub cache, listed when they differ" || { flunk "model files (exit $c)"; cat hub.txt; }
import hashlib, json, sys
side = json.load(open(sys.argv[1]))
files = side["model_files"]
assert sorted(f["component"] for f in files) == ["text_encoder", "transformer", "transformer_2", "vae"], files
for f in files:
    data = open(f["file"], "rb").read()
    assert f["sha256"] == hashlib.sha256(data).hexdigest() and f["bytes"] == len(data), f
p = json.load(open(sys.argv[2]))["pairs"][0]
keys = [d["key"] for d in p["settings_diff"]]
assert sorted(keys) == ["model", "model_files", "preset", "settings.model"], keys
assert p["verdict"] == "pass" and p["latents"]["max_abs"] == 0, p
PY2
# The forest on 2 ranks against one rank: within the layout profile (the same video up to float rounding).
mkdir -p one two && ln -sf ../golden/forest.mp4 one/forest.mp4 && ln -sf ../golden/forest.mp4.json one/forest.mp4.json &&
  ln -sf ../new/forest.mp4 two/forest.mp4 && ln -sf ../new/forest.mp4.json two/forest.mp4.json
"$cmp" two one --profile layout > layout.txt 2>&1 && pass "another layout passes --profile layout" ||
  { flunk "another layout, layout profile"; cat layout.txt; }
# A threshold flag over the profile: the balloon passes when the gates are loose enough, and the fox fails an
# impossible PSNR (inf is not >= a finite bound? it is: use MAD instead) - a frame-equal pair passes any bound.
"$cmp" new golden --psnr-min 0 --ssim-min -1 --mad-max 255 --latent-cosine-min -1 --allow-missing --json loose.json > loose.txt 2>&1
"$venv/bin/python" -c "
import json; j = json.load(open('loose.json')); v = {p['name']: p['verdict'] for p in j['pairs']}
assert v['balloon.mp4'] == 'pass' and v['waves.mp4'] == 'missing' and v['cat.mp4'] == 'failed', v
assert j['thresholds']['psnr_min'] == 0 and j['thresholds']['mad_max'] == 255, j['thresholds']
" && pass "threshold flags override the profile" || { flunk "threshold flags"; cat loose.txt; }

# Videos without sidecars (another tool's): one of another size, one with fewer frames, one equal. Each a
# failed pair with its reason (the others still compared), the missing sidecars said once per run.
mkdir -p nos/a nos/b
cp golden/fox.mp4 nos/b/fox.mp4 && cp golden/boat.mp4 nos/b/boat.mp4 && cp golden/forest.mp4 nos/b/forest.mp4
cp golden/forest.mp4 nos/a/forest.mp4
ffmpeg -v error -y -i golden/fox.mp4 -vf scale=64:64 -c:v libx264 -pix_fmt yuv420p nos/a/fox.mp4
ffmpeg -v error -y -i golden/boat.mp4 -frames:v 5 -c:v libx264 -pix_fmt yuv420p nos/a/boat.mp4
"$cmp" nos/a nos/b --json nos.json > nos.txt 2>&1
c=$?
"$venv/bin/python" - nos.json <<'PY2' && [ "$c" = 1 ] && pass "no sidecars: size and frame count differ (exit $c)" || { flunk "no sidecars (exit $c)"; cat nos.txt; }
import json, sys
j = json.load(open(sys.argv[1])); by = {p["name"]: p for p in j["pairs"]}
assert by["fox.mp4"]["verdict"] == "failed" and by["fox.mp4"]["reasons"] == ["frame size differs: A 64x64, B 96x96"], by["fox.mp4"]["reasons"]
b = by["boat.mp4"]
assert b["verdict"] == "failed" and b["reasons"][0] == "frame count differs: A 5, B 9 (the first 5 measured)", b["reasons"]
assert len(b["frames"]) == 5 and b["metrics"]["min_psnr"] != None, b
assert by["forest.mp4"]["verdict"] == "pass" and by["forest.mp4"]["sidecars"] is False, by["forest.mp4"]
notes = [n for n in j["notes"] if "no sidecar" in n]
assert notes == ["3 of 3 videos of nos/a have no sidecar (<video>.json): their settings are not compared",
                 "3 of 3 videos of nos/b have no sidecar (<video>.json): their settings are not compared"], notes
PY2

# --- LPIPS through the flag (weights: a random AlexNet and the package's linear layers) --------------------
if "$venv/bin/python" "$SOURCE_DIR/tools/lpips/convert_weights.py" --random-backbone 0 -o lpips.safetensors >/dev/null 2>&1; then
  "$cmp" new golden --lpips-weights lpips.safetensors --json lp.json > lp.txt 2>&1
  "$cmp" golden golden --lpips-weights lpips.safetensors --json lp0.json >> lp.txt 2>&1
  "$venv/bin/python" -c "
import json; j = json.load(open('lp.json')); by = {p['name']: p for p in j['pairs']}
assert j['lpips'] is True, j['lpips']
assert all(f['lpips'] == 0 for p in json.load(open('lp0.json'))['pairs'] for f in p['frames']), 'equal frames: LPIPS 0'
assert by['balloon.mp4']['metrics']['max_lpips'] > 0.01, by['balloon.mp4']['metrics']
assert by['balloon.mp4']['metrics']['max_lpips'] > by['fox.mp4']['metrics']['max_lpips'], 'fewer steps: further'
" && pass "LPIPS measured with --lpips-weights" || { flunk "LPIPS through the flag"; cat lp.txt; }
else
  flunk "tools/lpips/convert_weights.py --random-backbone"
fi

# --- bad input: one line, the exit code, nothing written ---------------------------------------------------
bad() {  # NAME RC TEXT -- ARGS...
  local name=$1 rc=$2 text=$3
  shift 4
  local o c
  o=$("$cmp" "$@" 2>&1)
  c=$?
  if [ "$c" = "$rc" ] && [ "$(grep -c '^omni-compare: error' <<<"$o")" = 1 ] && grep -qF -- "$text" <<<"$o"; then
    pass "$name (exit $c)"
  else
    flunk "$name: exit $c (want $rc), want text: $text"
    echo "$o"
  fi
}
mkdir -p empty
bad "a folder with no video" 3 "no video in it" -- empty golden
bad "a missing folder" 3 "no such folder" -- nowhere golden
bad "a run against a file" 2 "compare a run with a run" -- golden golden/fox.mp4
bad "an unknown profile" 2 "--profile fast: expected one of exact, layout, kernel, model" -- new golden --profile fast
bad "--tolerance on runs" 2 "--tolerance applies to two files" -- new golden --tolerance 1
bad "--report on files" 2 "--report applies to two runs" -- golden/fox.mp4 golden/fox.mp4 --report r2
bad "an existing --json" 2 "report.json" -- new golden --json report.json
bad "a report folder in use" 2 "--report report: the folder exists and is not empty" -- new golden --report report
echo '{"prompt": "x"}' > nooutput.jsonl
bad "a manifest line without output" 3 "nooutput.jsonl line 1: no \"output\"" -- nooutput.jsonl golden
[ ! -e r2 ] && pass "nothing written on a usage error" || flunk "r2 written"
cmp -s report.json <("$cmp" new golden --json /dev/stdout 2>/dev/null >/dev/null; cat report.json) ||
  flunk "report.json changed"

# --- the report in a real headless browser ----------------------------------------------------------------
browser=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$browser" ]; then
  flunk "no chromium (tools/install-deps.sh installs it)"
else
  url="file://$work/report/index.html"
  b=(--headless --no-sandbox --disable-gpu --user-data-dir="$work/chromium-profile" --virtual-time-budget=15000)
  timeout 120 "$browser" "${b[@]}" --window-size=1280,2400 --screenshot="$work/report.png" "$url" > /dev/null 2>&1
  [ -s report.png ] && pass "screenshot taken" || flunk "no screenshot"
  timeout 120 "$browser" "${b[@]}" --enable-logging=stderr --v=0 --dump-dom "$url" > dom.html 2> console.log
  grep -q 'data-load-errors="0"' dom.html && pass "every image and video of the page loaded" ||
    { flunk "the page's media did not all load: $(grep -o '<body[^>]*>' dom.html)"; }
  if grep -E 'CONSOLE|Uncaught|Failed to load resource' console.log | grep -v 'dbus' > console.txt && [ -s console.txt ]; then
    flunk "console messages:"; cat console.txt
  else
    pass "no console error"
  fi
  "$venv/bin/python" - dom.html report.json <<'PY' && pass "the summary table equals the JSON" || flunk "the summary table equals the JSON"
import json, sys
from html.parser import HTMLParser
class Table(HTMLParser):
    def __init__(self):
        super().__init__(); self.rows = []; self.inside = False; self.cell = None
    def handle_starttag(self, tag, attrs):
        if tag == "table" and ("id", "summary") in attrs: self.inside = True
        elif self.inside and tag == "tr": self.rows.append([])
        elif self.inside and tag == "td": self.cell = ""
    def handle_endtag(self, tag):
        if tag == "table": self.inside = False
        elif self.inside and tag == "td": self.rows[-1].append(self.cell.strip()); self.cell = None
    def handle_data(self, data):
        if self.cell is not None: self.cell += data
t = Table(); t.feed(open(sys.argv[1]).read())
rows = [r for r in t.rows if r]
j = json.load(open(sys.argv[2]))
def text(v, digits):
    if v is None: return "n/a"
    if isinstance(v, str): return v
    return f"{v:.{digits}f}"
errors = []
if len(rows) != len(j["pairs"]): errors.append(f"{len(rows)} rows, {len(j['pairs'])} pairs")
for i, (r, p) in enumerate(zip(rows, j["pairs"])):
    m = p["metrics"]
    want = [str(i + 1), p["name"], p["verdict"], text(m["min_psnr"], 2), text(m["min_ssim"], 4), text(m["max_mad"], 3),
            text(m["max_lpips"], 4), text(p["latents"]["cosine"], 6), "; ".join(p["reasons"])]
    if r != want: errors.append(f"row {i + 1}: {r} != {want}")
for e in errors: print("  ", e)
sys.exit(1 if errors else 0)
PY
fi
summary
