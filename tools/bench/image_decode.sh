#!/usr/bin/env bash
# Decoding time of a 4,000 x 3,000 photo (tools/reference/image_corpus.py's photo-like source) as JPEG (quality 90,
# 4:2:0 and progressive), WebP (lossy) and PNG: ours (io::read_image, image_decode_bench) beside diffusers'
# load_image on the same files. Target: the baseline JPEG under 150 ms.
#   tools/bench/image_decode.sh [BUILD_DIR]      (RUNS=10)
set -euo pipefail
build=${1:-build}
py=${PYTHON:-tools/reference/.venv/bin/python}
runs=${RUNS:-10}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
PYTHONPATH=tools/reference "$py" - "$work" <<'PY'
import sys
from image_corpus import photo
img = photo(3000, 4000, 11)
img.save(f"{sys.argv[1]}/photo.jpg", quality=90, subsampling=2)
img.save(f"{sys.argv[1]}/photo_progressive.jpg", quality=90, subsampling=2, progressive=True)
img.save(f"{sys.argv[1]}/photo.webp", quality=80)
img.save(f"{sys.argv[1]}/photo.png", compress_level=6)
PY
files=("$work/photo.jpg" "$work/photo_progressive.jpg" "$work/photo.webp" "$work/photo.png")
echo "== ours (io::read_image)"
"$build/tools/bench/image_decode_bench" --runs "$runs" "${files[@]}"
echo "== diffusers.utils.load_image (Pillow)"
"$py" - "$runs" "${files[@]}" <<'PY'
import sys, time
import numpy as np
from diffusers.utils import load_image
runs = int(sys.argv[1])
for f in sys.argv[2:]:
    np.asarray(load_image(f))
    ms = []
    for _ in range(runs):
        t0 = time.perf_counter()
        a = np.asarray(load_image(f))
        ms.append((time.perf_counter() - t0) * 1e3)
    ms.sort()
    print(f"load_image {f} {a.shape[0]}x{a.shape[1]}: best {ms[0]:.1f} ms, median {ms[len(ms) // 2]:.1f} ms over {runs} runs")
PY
