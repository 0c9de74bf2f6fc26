#!/usr/bin/env bash
# The manual holds together:
# - README.md is a front door: at most 120 lines;
# - every relative link of README.md and docs/*.md names a file that exists, and its #anchor a heading there
#   (GitHub's slugs);
# - every "docs/PAGE.md#anchor" an error of the code points to (lib/core/docs_links.h, and any other in lib/ and
#   apps/) names a heading that exists, and each of docs_links.h's pointers is used by the code;
# - errors end with their pointer where one is due: a model not found, a memory plan that does not fit.
#   check_docs.sh SOURCE_DIR OMNI_GENERATE
set -uo pipefail
src=$1; gen=$2
python3 - "$src" <<'PY' || exit 1
import os, re, subprocess, sys
src = sys.argv[1]
bad = []
def slug(h):
    h = h.strip().lower()
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")
def anchors(path):
    out = set()
    for line in open(path, encoding="utf-8"):
        m = re.match(r"#+ (.*)", line)
        if m:
            out.add(slug(m.group(1)))
    return out
readme = os.path.join(src, "README.md")
n = sum(1 for _ in open(readme, encoding="utf-8"))
if n > 120:
    bad.append(f"README.md has {n} lines (at most 120: details go to docs/)")
pages = [readme] + [os.path.join(src, "docs", f) for f in sorted(os.listdir(os.path.join(src, "docs"))) if f.endswith(".md")]
links = 0
for page in pages:
    text = open(page, encoding="utf-8").read()
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        links += 1
        path, _, anchor = target.partition("#")
        full = os.path.normpath(os.path.join(os.path.dirname(page), path)) if path else page
        if not os.path.exists(full):
            bad.append(f"{os.path.relpath(page, src)}: link to {target}: no such file")
        elif anchor and anchor not in anchors(full):
            bad.append(f"{os.path.relpath(page, src)}: link to {target}: no such heading")
pointers = {}
for root in ("lib", "apps"):
    for d, _, files in os.walk(os.path.join(src, root)):
        for f in files:
            if f.endswith((".cpp", ".h")):
                p = os.path.join(d, f)
                for m in re.findall(r"docs/([\w\-]+\.md)#([\w\-]+)", open(p, encoding="utf-8").read()):
                    pointers.setdefault(m, []).append(os.path.relpath(p, src))
for (page, anchor), where in sorted(pointers.items()):
    full = os.path.join(src, "docs", page)
    if not os.path.exists(full) or anchor not in anchors(full):
        bad.append(f"{where[0]}: points to docs/{page}#{anchor}, which does not exist")
consts = re.findall(r"constexpr const char\* (k\w+) =", open(os.path.join(src, "lib/core/docs_links.h")).read())
used = subprocess.run(["grep", "-rhoE", r"docs::k\w+", os.path.join(src, "lib"), os.path.join(src, "apps")],
                      capture_output=True, text=True).stdout.split()
for c in consts:
    if f"docs::{c}" not in used:
        bad.append(f"lib/core/docs_links.h: {c} is used by no error")
print(f"{len(pages)} pages, {links} relative links, {len(pointers)} error pointers")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
out=$("$gen" --model Nobody/No-Such-Model --prompt x 2>&1); rc=$?
[ $rc -eq 3 ] && [[ $out == *"(see docs/troubleshooting.md#model-not-found)" ]] ||
  { echo "FAIL: a model not found (exit $rc) does not point to the manual: $out"; exit 1; }
out=$("$gen" --prompt x --height 4096 --width 4096 --num-frames 201 --dtype float32 --strict-memory --dry-run 2>&1)
rc=$?
[ $rc -eq 2 ] && [[ $out == *"see docs/memory-and-speed.md#does-not-fit"* ]] ||
  { echo "FAIL: a plan that does not fit (exit $rc) does not point to the manual: ${out##*$'\n'}"; exit 1; }
echo "ok: the manual's links, anchors and error pointers hold"
