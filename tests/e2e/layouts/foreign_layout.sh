#!/usr/bin/env bash
# omni-generate on weights in a foreign layout against the same weights in the diffusers layout (the twin):
#   foreign_layout.sh GENERATE VENV CONVERTED LAYOUT NP [extra flags...]
# LAYOUT: original (--model CONVERTED/original), clip-NAMES (the diffusers folder with --image-encoder the CLIP file
# in Wan's or open_clip's names), comfy-DT (--model the twin, every component replaced by the
# ComfyUI files: --transformer, --transformer-2, --text-encoder, --vae, --image-encoder), or files-DT (the ComfyUI files alone,
# with --tokenizer: every config inferred from the tensor shapes, Wan2.2's defaults), or carried-DT (the same
# without --tokenizer: the SentencePiece model the ComfyUI text-encoder file carries). Both runs on NP ranks with the same
# flags; every tensor --save-tensors writes (prompt embeddings, each step's latents, the frames) must be
# bit-identical: the two read the same stored numbers, only the names and files differ. On several ranks with
# HSDP each rank's bytes read from disk must equal the twin run's (original, comfy-fp32: the same bytes stored),
# i.e. the .pth and single-file readers read only the rank's shard like the safetensors one.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; venv=$2; conv=$3; layout=$4; np=$5; shift 5
need_venv "$venv"
work=$conv/run-$layout-np$np
rm -rf "$work"; mkdir -p "$work"
files_only=0
if [[ $layout == files-* ]]; then files_only=1; layout=comfy-${layout#files-}; fi
if [[ $layout == carried-* ]]; then files_only=2; layout=comfy-${layout#carried-}; fi
twin=$conv/$layout-twin
files=()
if [[ $layout == original ]]; then
  files=(--model "$conv/original")
elif [[ $layout == clip-* ]]; then
  twin=$conv/original-twin
  files=(--model "$twin")
  for f in "$conv/$layout"/*.pth "$conv/$layout"/*.bin; do [[ -f $f ]] && files+=(--image-encoder "$f"); done
else
  files=(--model "$twin")
  [[ $files_only == 1 ]] && files=(--tokenizer "$twin/tokenizer")
  [[ $files_only == 2 ]] && files=()
  for f in "$conv/$layout"/*.safetensors; do
    case $(basename "$f") in
      *high_noise*|*_5B_*|wan2.1_*|wan2.2_animate_*) files+=(--transformer "$f") ;;
      clip_vision*) files+=(--image-encoder "$f") ;;
      *low_noise*) files+=(--transformer-2 "$f") ;;
      umt5*) files+=(--text-encoder "$f") ;;
      *vae*) files+=(--vae "$f") ;;
    esac
  done
fi
common=(--device cpu --dtype float32 --vae-dtype float32 --log-level warn "$@")
launch "$np" "$gen" --model "$twin" "${common[@]}" --output "$work/twin.mp4" --save-tensors "$work/twin.safetensors" \
  --report "$work/twin.json"
launch "$np" "$gen" "${files[@]}" "${common[@]}" --output "$work/conv.mp4" --save-tensors "$work/conv.safetensors" \
  --report "$work/conv.json"
"$venv/bin/python" - "$work" "$layout" "$np" <<'PY' || flunk "$layout on $np rank(s) differs from the diffusers layout"
import json, sys
from safetensors.torch import load_file
work, layout, np_ = sys.argv[1], sys.argv[2], int(sys.argv[3])
a, b = load_file(f"{work}/twin.safetensors"), load_file(f"{work}/conv.safetensors")
assert set(a) == set(b) and "frames" in a, f"tensor sets differ: {sorted(set(a) ^ set(b))}"
worst = max(((a[k].double() - b[k].double()).abs().max().item(), k) for k in a)
print(f"{layout} np{np_}: {len(a)} tensors, max difference {worst[0]:g} ({worst[1]})")
assert worst[0] == 0, "not bit-identical"
if np_ > 1 and layout in ("original", "comfy-fp32", "clip-wan", "clip-open_clip"):
    rt = [r["disk_bytes_read"] for r in json.load(open(f"{work}/twin.json"))["ranks"]]
    rc = [r["disk_bytes_read"] for r in json.load(open(f"{work}/conv.json"))["ranks"]]
    print(f"bytes read per rank: diffusers layout {rt}, {layout} {rc}")
    assert rt == rc, "a rank read other bytes than from the diffusers layout"
PY
pass "$layout on $np rank(s): bit-identical to the diffusers layout"
summary
