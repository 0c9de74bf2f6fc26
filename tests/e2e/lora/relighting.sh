#!/usr/bin/env bash
# Wan2.2-Animate-14B's relighting LoRA (relighting_lora.ckpt) through the command line, on the animate-tiny
# checkpoint. tools/lora/make_lora.py writes the file as Wan's training wrote it (torch.save({"state_dict": ...}),
# peft's get_peft_model_state_dict keys base_model.model.blocks.N.<Wan module>.lora_A.weight / lora_B.weight, no
# alpha, on every Linear of the blocks: the attentions with k_img / v_img, and the FFN), the same update in
# diffusers' names, and the transformer weights with it merged in float64. Then:
#   - tools/reference/peft_relighting_keys.py: peft itself names a Wan-shaped model's LoRA so, and loads the file
#     as wan/animate.py does (set_peft_model_state_dict; scale lora_alpha / r = 1, merge W + B @ A);
#   - omni-generate --lora relighting_lora.ckpt on NP ranks (the layout flags) gives the video of the merged
#     weights within 1e-5 (frames, each segment's last latents), and bit for bit the video of --lora with the
#     diffusers-named file (on the same ranks), which differs from the plain model's.
#   relighting.sh GENERATE COMPARE VENV SOURCE_DIR WORK NP [layout flags...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; cmp=$2; venv=$3; src=$4; work=$5; np=$6; shift 6
need_venv "$venv"
py=$(cd "$venv" && pwd)/bin/python
model=$src/tests/data/reference/animate-tiny/model
seg=$src/tests/data/reference/animate-segments
rm -rf "$work"; mkdir -p "$work"
cp -r "$model" "$work/merged"
lora=(--transformer "$model/transformer" --targets attn,img,ffn --rank 4 --seed 5 --std-up 0.05)
"$py" "$src/tools/lora/make_lora.py" "${lora[@]}" --format wan-peft-ckpt --out "$work/relighting_lora.ckpt" \
  --merge-into "$model/transformer/diffusion_pytorch_model.safetensors" --scale 1 \
  --merged-out "$work/merged/transformer/diffusion_pytorch_model.safetensors" 2>/dev/null
"$py" "$src/tools/lora/make_lora.py" "${lora[@]}" --format diffusers --out "$work/diffusers.safetensors" 2>/dev/null
(cd "$src/tools/reference" && "$py" peft_relighting_keys.py "$model/transformer" "$work/relighting_lora.ckpt") \
  >"$work/peft.txt" 2>&1 || { cat "$work/peft.txt"; fail "peft does not name or load the .ckpt as Wan's code"; }
grep -v '^SKIP' "$work/peft.txt" | sed 's/^/  /'
common=(--image "$seg/ref.jpg" --pose-video "$seg/pose.mp4" --face-video "$seg/face.mp4"
        --prompt "A dancer waves her arms in a studio" --height 32 --width 48 --segment-frames 9
        --prev-segment-frames 1 --num-inference-steps 3 --guidance-scale 1 --seed 51 --max-sequence-length 512
        --device cpu --dtype float32 --vae-dtype float32 --log-level warn)
launch "$np" "$gen" --model "$model" "${common[@]}" --lora "$work/relighting_lora.ckpt" --output "$work/ckpt.mp4" \
  --save-tensors "$work/ckpt.safetensors" "$@"
launch "$np" "$gen" --model "$model" "${common[@]}" --lora "$work/diffusers.safetensors" \
  --output "$work/diffusers.mp4" --save-tensors "$work/diffusers.safetensors.out" "$@"
"$gen" --model "$work/merged" "${common[@]}" --output "$work/merged.mp4" --save-tensors "$work/merged.safetensors"
"$gen" --model "$model" "${common[@]}" --output "$work/plain.mp4" --save-tensors "$work/plain.safetensors"
"$cmp" "$work/ckpt.safetensors" "$work/merged.safetensors" --keys frames,step02.latents,step05.latents --tolerance 1e-5
"$py" - "$work" <<'PY' || fail "the .ckpt and the diffusers-named file give different videos, or the LoRA changes nothing"
import sys
from safetensors.torch import load_file
w = sys.argv[1]
a, b = load_file(f"{w}/ckpt.safetensors"), load_file(f"{w}/diffusers.safetensors.out")
plain = load_file(f"{w}/plain.safetensors")
assert set(a) == set(b) and "frames" in a, sorted(set(a) ^ set(b))
worst = max((a[k].double() - b[k].double()).abs().max().item() for k in a)
moved = (a["frames"].double() - plain["frames"].double()).abs().max().item()
print(f"relighting_lora.ckpt vs diffusers names: {len(a)} tensors, max difference {worst:g}; "
      f"the LoRA moves the frames by up to {moved:.3g}")
assert worst == 0, "not bit-identical"
assert moved > 1e-3, "the LoRA did not change the video"
PY
echo "ok: relighting_lora.ckpt on $np rank(s) $* = merged weights = the diffusers-named update"
