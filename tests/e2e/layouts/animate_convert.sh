#!/usr/bin/env bash
# Wan2.2-Animate's foreign layouts, written from Diffusers folders and proven by diffusers' own converter
# (scripts/convert_wan_to_diffusers.py, vendored: tools/reference/vendor), and their diffusers-layout twins:
#   animate_convert.sh SOURCE_DIR VENV OUT
# OUT/original-twin   tools/reference/make_animate_vith.py's Diffusers folder: the tiny Animate model with a CLIP of
#                     ViT-H/14's width (what an original folder's models_clip_*.pth implies; its config is nowhere)
# OUT/original        that folder in Wan-AI/Wan2.2-Animate-14B's layout (foreign_layouts.py original): config.json
#                     (WanAnimateModel), the transformer shards in Wan's names (motion encoder with its Blur buffers
#                     and [1, C, 1, 1] biases, face encoder, fused face-adapter key / values), the T5 and VAE .pth,
#                     models_clip_*.pth, google/umt5-xxl
# OUT/comfy-DT        animate-tiny's ComfyUI files (DT: fp32 bf16 fp8_scaled): wan2.2_animate_14B_DT.safetensors in
#                     Wan's names under model.diffusion_model. (fp8_scaled: the block and face-adapter Linears),
#                     umt5_xxl, wan_2.1_vae, clip_vision_h
# OUT/comfy-DT-twin   their twins (tools/reference/animate_layout_twin.py: the transformer through the converter)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
src=$1; venv=$2; out=$3
need_venv "$venv"
py=$(cd "$venv" && pwd)/bin/python
tools=$src/tools/reference
tiny=$src/tests/data/reference/animate-tiny/model
rm -rf "$out"; mkdir -p "$out"
"$py" "$tools/make_animate_vith.py" "$out/original-twin" >/dev/null 2>&1 || fail "make_animate_vith.py"
"$py" "$tools/foreign_layouts.py" original "$out/original-twin" "$out/original" --dtype keep >/dev/null
# check SOURCE CONVERTED NAME: the checker's verdict, which must include the converter's line.
check() {
  "$py" "$tools/check_foreign_layouts.py" "$1" "$2" >"$out/$3.check" 2>/dev/null ||
    { cat "$out/$3.check"; flunk "$3 of $1 does not read back"; return; }
  grep -q "^PASS.*convert_wan_to_diffusers.py (Animate) == source" "$out/$3.check" ||
    { cat "$out/$3.check"; flunk "$3: diffusers' converter did not check the transformer"; return; }
  pass "$3: $(grep -c '^PASS' "$out/$3.check") checks of the references pass"
}
check "$out/original-twin" "$out/original" original
grep -q '^PASS.*models_clip_.*vision tower' "$out/original.check" || flunk "original: the CLIP was not checked"
for dt in fp32 bf16 fp8_scaled; do
  "$py" "$tools/foreign_layouts.py" comfy "$tiny" "$out/comfy-$dt" --dtype "$dt" --spiece >/dev/null
  check "$tiny" "$out/comfy-$dt" "comfy-$dt"
  "$py" "$tools/animate_layout_twin.py" "$tiny" "$out/comfy-$dt" "$out/comfy-$dt-twin" >/dev/null 2>&1 ||
    flunk "no diffusers twin of the ComfyUI $dt files"
done
summary
