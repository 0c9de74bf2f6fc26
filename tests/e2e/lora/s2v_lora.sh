#!/usr/bin/env bash
# LoRA on Wan2.2-S2V, whose transformer keeps Wan's names, on its tiny original folder. tools/lora/make_lora.py
# (PyTorch from PyPI) writes one update of the attention, FFN, head, time and text layers in three formats (Wan's
# diffusion_model.* lora_down / lora_up with alpha, Kohya's lora_unet_*, diffusers' transformer.blocks.N.attn1.*),
# the Wan file with full deltas besides (diff on a weight, diff_b on biases, diff on the norm and the modulation
# table), and the folder's weights with the Wan file merged in float64 (written in float32). Then:
#   - --lora on one rank and on HSDP 2 (each rank merging into its slice) gives the merged folder's tensors (the
#     frames, every clip's latents) within 1e-5 of the largest value (the merge in float32 against float64);
#   - the Kohya and the diffusers-named files give each other's tensors bit for bit (the same numbers under the
#     other naming), and not the plain folder's;
#   - a Kijai-style diff_m key (a delta of a block's modulation table, which S2V names blocks.N.modulation)
#     updates it, and the sidecar lists the files and their scales.
#   s2v_lora.sh GENERATE COMPARE VENV SOURCE_DIR WORK
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; cmp=$2; venv=$3; src=$4; work=$5
need_venv "$venv"
py=$(cd "$venv" && pwd)/bin/python
model=$src/tests/data/reference/s2v-pipeline/model
in=$src/tests/data/reference/s2v-pipeline/inputs
rm -rf "$work"; mkdir -p "$work/merged"
for f in "$model"/*; do
  [ "$(basename "$f")" = diffusion_pytorch_model.safetensors ] || ln -s "$f" "$work/merged/"
done
lora=(--transformer "$model" --targets attn,ffn,head,time,text --rank 4 --alpha 8 --seed 9 --std-up 0.05)
"$py" "$src/tools/lora/make_lora.py" "${lora[@]}" --format wan --full-deltas --out "$work/lora-wan.safetensors" \
  --merge-into "$model/diffusion_pytorch_model.safetensors" --scale 0.8 --merged-dtype float32 \
  --merged-out "$work/merged/diffusion_pytorch_model.safetensors" 2>/dev/null
"$py" "$src/tools/lora/make_lora.py" "${lora[@]}" --format kohya --out "$work/lora-kohya.safetensors" 2>/dev/null
"$py" "$src/tools/lora/make_lora.py" "${lora[@]}" --format diffusers --out "$work/lora-diffusers.safetensors" 2>/dev/null
# Kijai's diff_m: a [6, dim] delta of block 1's modulation table (S2V's blocks.1.modulation, [1, 6, dim]).
"$py" - "$work/lora-diff_m.safetensors" <<'PY'
import sys, torch
from safetensors.torch import save_file
g = torch.Generator().manual_seed(4)
save_file({"diffusion_model.blocks.1.diff_m": torch.randn(6, 64, generator=g) * 0.5}, sys.argv[1])
PY

common=(--image "$in/ref_80x96.png" --audio "$in/audio.wav" --prompt "a woman talks" --height 64 --width 64
        --num-frames 12 --num-inference-steps 3 --guidance-scale 4.5 --seed 3 --device cpu --dtype float32
        --vae-dtype float32 --log-level warn)
saved_run merged 1 --model "$work/merged"
saved_run plain 1 --model "$model"
saved_run wan 1 --model "$model" --lora "$work/lora-wan.safetensors:0.8"
saved_run wan-hsdp2 2 --model "$model" --lora "$work/lora-wan.safetensors:0.8" --layout manual --use-hsdp --hsdp-shard-size 2
saved_run kohya 1 --model "$model" --lora "$work/lora-kohya.safetensors"
saved_run diffusers 1 --model "$model" --lora "$work/lora-diffusers.safetensors"
saved_run diff-m 1 --model "$model" --lora "$work/lora-diff_m.safetensors"
keys=frames,clip00.latents,clip01.latents,step00.latents,step05.latents
for name in wan wan-hsdp2; do
  "$cmp" "$work/$name.safetensors" "$work/merged.safetensors" --keys "$keys" --rel-tolerance 1e-5 >"$work/$name.cmp" ||
    { cat "$work/$name.cmp"; fail "--lora ($name) is not the merged folder's video"; }
  pass "--lora in Wan's names with full deltas ($name) = the weights merged by PyTorch, within 1e-5 of the largest value"
done
"$py" - "$work" <<'PY' || fail "Kohya / diffusers names, diff_m or the sidecar"
import json, sys
from safetensors.torch import load_file
w = sys.argv[1]
t = {n: load_file(f"{w}/{n}.safetensors") for n in ("kohya", "diffusers", "plain", "diff-m", "wan")}
worst = max((t["kohya"][k].double() - t["diffusers"][k].double()).abs().max().item() for k in t["kohya"])
moved = {n: (t[n]["frames"].double() - t["plain"]["frames"].double()).abs().max().item()
         for n in ("kohya", "diff-m", "wan")}
print(f"Kohya vs diffusers names: max difference {worst:g}; frames moved from the plain folder's by {moved}")
assert set(t["kohya"]) == set(t["diffusers"]) and worst == 0, "Kohya and diffusers names differ"
assert all(m > 1e-3 for m in moved.values()), "a LoRA did not change the video"
side = json.load(open(f"{w}/wan.mp4.json"))["lora"]
print("sidecar lora:", side)
files = [f for expert in side.values() for f in expert]
assert len(files) == 1 and files[0]["path"].endswith("lora-wan.safetensors") and abs(files[0]["scale"] - 0.8) < 1e-12, side
PY
pass "Kohya and diffusers names give the same video; diff_m updates S2V's modulation; the sidecar lists the file"
summary
