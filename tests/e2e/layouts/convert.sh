#!/usr/bin/env bash
# Writes one fixture checkpoint in the foreign layouts omni-generate reads, and each one's diffusers-layout twin
# (the same stored values under diffusers names, read back by diffusers / transformers):
#   convert.sh SOURCE_DIR VENV CASE_MODEL OUT [DTYPES]
# OUT/original        Wan2.2's original layout (.pth T5 and VAE, sharded experts), the source's float32 values
# OUT/original-twin   the source folder (ti2v: with Wan2.2's latent normalization, which the original layout's VAE
#                     implies, in vae/config.json)
# OUT/clip-NAMES      models with a CLIP image encoder: the encoder alone in Wan's (NAMES wan) or open_clip's names
# OUT/comfy-DT        ComfyUI single files (DT: fp32 fp16 bf16 fp8_scaled), OUT/comfy-DT-twin their twins
# Every layout is first proven by tools/reference/check_foreign_layouts.py (diffusers' from_single_file,
# transformers' UMT5, the fp8 rounding bound).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
src=$1; venv=$2; model=$3; out=$4; dtypes=${5:-fp32 fp16 bf16 fp8_scaled}
need_venv "$venv"
py=$venv/bin/python
tools=$src/tools/reference
rm -rf "$out"; mkdir -p "$out"
"$py" "$tools/foreign_layouts.py" original "$model" "$out/original" --dtype keep >/dev/null
"$py" "$tools/check_foreign_layouts.py" "$model" "$out/original" >"$out/original.check" ||
  { cat "$out/original.check"; flunk "the original layout of $model does not read back"; }
cp -r "$model" "$out/original-twin"
"$py" - "$out/original-twin/vae/config.json" <<'PY'
import json, sys
# Wan2.2's Wan2_2_VAE (wan/modules/vae2_2.py) hard-codes these; the Diffusers repositories carry them in
# vae/config.json. The tiny fixture's own are zeros and ones.
MEAN = [-0.2289, -0.0052, -0.1323, -0.2339, -0.2799, 0.0174, 0.1838, 0.1557, -0.1382, 0.0542, 0.2813, 0.0891,
        0.1570, -0.0098, 0.0375, -0.1825, -0.2246, -0.1207, -0.0698, 0.5109, 0.2665, -0.2108, -0.2158, 0.2502,
        -0.2055, -0.0322, 0.1109, 0.1567, -0.0729, 0.0899, -0.2799, -0.1230, -0.0313, -0.1649, 0.0117, 0.0723,
        -0.2839, -0.2083, -0.0520, 0.3748, 0.0152, 0.1957, 0.1433, -0.2944, 0.3573, -0.0548, -0.1681, -0.0667]
STD = [0.4765, 1.0364, 0.4514, 1.1677, 0.5313, 0.4990, 0.4818, 0.5013, 0.8158, 1.0344, 0.5894, 1.0901,
       0.6885, 0.6165, 0.8454, 0.4978, 0.5759, 0.3523, 0.7135, 0.6804, 0.5833, 1.4146, 0.8986, 0.5659,
       0.7069, 0.5338, 0.4889, 0.4917, 0.4069, 0.4999, 0.6866, 0.4093, 0.5709, 0.6065, 0.6415, 0.4944,
       0.5726, 1.2042, 0.5458, 1.6887, 0.3971, 1.0600, 0.3943, 0.5537, 0.5444, 0.4089, 0.7468, 0.7744]
path = sys.argv[1]
c = json.load(open(path))
if c["z_dim"] == 48:
    c["latents_mean"], c["latents_std"] = MEAN, STD
    json.dump(c, open(path, "w"), indent=2)
PY
if [[ -d $model/image_encoder ]]; then
  # The CLIP alone in Wan's own names (models_clip_*.pth) and open_clip's (open_clip_pytorch_model.bin), for
  # --image-encoder.
  for names in wan open_clip; do
    "$py" "$tools/foreign_layouts.py" clip "$model" "$out/clip-$names" --names "$names" >/dev/null
    "$py" "$tools/check_foreign_layouts.py" "$model" "$out/clip-$names" >"$out/clip-$names.check" ||
      { cat "$out/clip-$names.check"; flunk "the $names CLIP file of $model does not compute what transformers does"; }
  done
fi
for dt in $dtypes; do
  "$py" "$tools/foreign_layouts.py" comfy "$model" "$out/comfy-$dt" --dtype "$dt" --spiece >/dev/null
  "$py" "$tools/check_foreign_layouts.py" "$model" "$out/comfy-$dt" >"$out/comfy-$dt.check" ||
    { cat "$out/comfy-$dt.check"; flunk "the ComfyUI $dt files of $model do not read back"; }
  "$py" "$tools/layout_twin.py" "$model" "$out/comfy-$dt" "$out/comfy-$dt-twin" >/dev/null 2>&1 ||
    flunk "no diffusers twin of the ComfyUI $dt files of $model"
done
pass "$model: original, CLIP and ComfyUI ($dtypes) layouts written and read back by the references"
summary
