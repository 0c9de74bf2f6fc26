#!/usr/bin/env bash
# Load time and peak host memory of a full-width TI2V-5B transformer (width 3072, 24 heads x 128, FFN 14336, 30
# blocks; random weights from omni-generate's generator, bfloat16, ~10 GB) read from the diffusers layout
# (sharded safetensors) and from the same tensors in one torch.save .pth file (--transformer X.pth), side by side.
# Target: the .pth load no slower than 1.2 x the safetensors one. Each run is one rank, --device cpu, one step on a
# tiny video; the figures are the report's load phase (seconds) and the load's peak RSS above the baseline.
#   tools/bench/foreign_load.sh [BUILD_DIR]    (WORK=folder keeps the ~20 GB of files; RUNS=3 runs each)
set -euo pipefail
build=${1:-build}
gen=$build/apps/omni-generate
make=$build/tools/make_checkpoint/omni-make-checkpoint
py=${PYTHON:-tools/reference/.venv/bin/python}
runs=${RUNS:-3}
work=${WORK:-$(mktemp -d)}; [ -n "${WORK:-}" ] || trap 'rm -rf "$work"' EXIT
[ -d "$work/ti2v5b" ] || "$make" --kind ti2v-5b --preset tiny --layers 30 --heads 24 --head-dim 128 \
  --ffn-dim 14336 --text-layers 2 --dtype bfloat16 --output "$work/ti2v5b" >/dev/null
[ -f "$work/transformer.pth" ] || "$py" - "$work/ti2v5b/transformer" "$work/transformer.pth" <<'PY'
import glob, sys, torch
from safetensors.torch import load_file
sd = {}
for f in sorted(glob.glob(sys.argv[1] + "/*.safetensors")):
    sd.update(load_file(f))
torch.save(sd, sys.argv[2])
print(f"{len(sd)} tensors, {sum(t.numel() * t.element_size() for t in sd.values()) / 2**30:.2f} GiB -> {sys.argv[2]}")
PY
flags=(--device cpu --dtype bfloat16 --prompt "A fox in the snow" --height 32 --width 32 --num-frames 1
       --num-inference-steps 1 --log-level warn --overwrite)
for i in $(seq "$runs"); do
  for kind in safetensors pth; do
    extra=(); [ "$kind" = pth ] && extra=(--transformer "$work/transformer.pth")
    "$gen" --model "$work/ti2v5b" "${extra[@]}" "${flags[@]}" --output "$work/$kind.mp4" --report "$work/$kind-$i.json"
  done
done
"$py" - "$work" "$runs" <<'PY'
import json, statistics, sys
work, runs = sys.argv[1], int(sys.argv[2])
med = {}
for kind in ("safetensors", "pth"):
    loads, rss = [], []
    for i in range(1, runs + 1):
        r = json.load(open(f"{work}/{kind}-{i}.json"))
        loads.append(r["timings"]["load"])
        k = r["ranks"][0]
        rss.append((k["load_peak_rss_bytes"] - k["baseline_rss_bytes"]) / 2**30)
    med[kind] = statistics.median(loads)
    print(f"{kind:12s} load {statistics.median(loads):7.2f} s (runs: {', '.join(f'{x:.2f}' for x in loads)}); "
          f"load peak RSS above baseline {max(rss):.2f} GiB")
ratio = med["pth"] / med["safetensors"]
print(f"pth / safetensors load time: {ratio:.3f} (target <= 1.2)")
sys.exit(0 if ratio <= 1.2 else 1)
PY
