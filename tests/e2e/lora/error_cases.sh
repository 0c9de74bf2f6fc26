#!/usr/bin/env bash
# Bad LoRA files through the command line: one error line naming the file and the key, exit 3 (a bad input
# file; 2 for a flag that does not fit the model), on every rank count, before any weight is read and with
# nothing written.
#   error_cases.sh GENERATE SOURCE_DIR WORK_DIR
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; src=$2; work=$3
ref=$src/tests/data/reference
rm -rf "$work"; mkdir -p "$work"
t2v=(--model "$ref/t2v-a14b-tiny/model" --prompt "a fox" --height 32 --width 48 --num-frames 5
     --num-inference-steps 2 --max-sequence-length 16 --dtype float32 --output "$work/a.mp4")

# lora FILE NAME=SHAPE...: a safetensors file of float32 tensors (values 0.01) with those names and shapes
# (SHAPE: 4x24), written here without numpy.
lora() {
  python3 - "$@" <<'PY'
import json, struct, sys
path, specs = sys.argv[1], sys.argv[2:]
header, data = {}, b""
for spec in specs:
    name, shape = spec.rsplit("=", 1)
    dims = [int(d) for d in shape.split("x")] if shape else []
    n = 1
    for d in dims:
        n *= d
    header[name] = {"dtype": "F32", "shape": dims, "data_offsets": [len(data), len(data) + 4 * n]}
    data += struct.pack(f"<{n}f", *([0.01] * n))
text = json.dumps(header).encode()
text += b" " * (-len(text) % 8)
open(path, "wb").write(struct.pack("<Q", len(text)) + text + data)
PY
}

# expect NAME NP RC TEXT -- flags... (lib.sh): exit code RC, exactly one error line containing TEXT, nothing loaded.
q=transformer.blocks.0.attn1.to_q
lora "$work/unknown.safetensors" "$q.lora_A.weight=4x24" "$q.lora_B.weight=24x4" \
  "transformer.blocks.0.attn1.to_qv.lora_A.weight=4x24" "transformer.blocks.0.attn1.to_qv.lora_B.weight=24x4"
expect unknown_key 2 3 "$work/unknown.safetensors: 2 key(s) name no module of transformer, first 'transformer.blocks.0.attn1.to_qv.lora_A.weight'; closest modules: blocks.0.attn1.to_q" \
  -- "${t2v[@]}" --lora "$work/unknown.safetensors"
lora "$work/sdxl.safetensors" "lora_unet_down_blocks_0_attentions_0_proj_in.lora_down.weight=4x320" \
  "lora_unet_down_blocks_0_attentions_0_proj_in.lora_up.weight=320x4"
expect no_module 1 3 "$work/sdxl.safetensors: none of its 2 keys names a module of transformer" \
  -- "${t2v[@]}" --lora "$work/sdxl.safetensors"
lora "$work/rank.safetensors" "$q.lora_A.weight=4x24" "$q.lora_B.weight=24x2"
expect rank_mismatch 2 3 "rank mismatch for transformer module 'blocks.0.attn1.to_q'" \
  -- "${t2v[@]}" --lora "$work/rank.safetensors"
lora "$work/half.safetensors" "$q.lora_A.weight=4x24"
expect a_without_b 1 3 "key '$q.lora_A.weight' has no matching lora_B / lora_up" \
  -- "${t2v[@]}" --lora "$work/half.safetensors"
lora "$work/a14b.safetensors" "$q.lora_A.weight=1x5120" "$q.lora_B.weight=5120x1"
expect shape_14b_on_tiny 2 3 "this LoRA is for a model of hidden size 5120 (Wan2.2 T2V/I2V-A14B or Wan2.1 14B), this one has 24" \
  -- "${t2v[@]}" --lora-2 "$work/a14b.safetensors"
lora "$work/i2v.safetensors" "diffusion_model.patch_embedding.lora_down.weight=1x36x1x2x2" \
  "diffusion_model.patch_embedding.lora_up.weight=24x1x1x1x1"
expect i2v_on_t2v 1 3 "this LoRA is for an image-to-video model (36 input channels: latent, mask, image), not this text-to-video model (16 latent channels)" \
  -- "${t2v[@]}" --lora "$work/i2v.safetensors"
# The 14B file on the TI2V-5B checkpoint's one transformer; --lora-2 on it names the flag.
expect lora2_on_one_expert 2 2 "--lora-2: " -- --model "$ref/ti2v-5b-tiny/model" --prompt x --height 32 --width 32 \
  --num-frames 5 --output "$work/a.mp4" --lora-2 "$work/half.safetensors"
expect missing_file 2 3 "--lora $work/nope.safetensors: no such file" -- "${t2v[@]}" --lora "$work/nope.safetensors"
expect bad_scale 1 2 "--lora (the SCALE of" -- "${t2v[@]}" --lora "$work/half.safetensors:1.2.3"
echo "not safetensors" > "$work/garbage.safetensors"
expect not_safetensors 1 3 "$work/garbage.safetensors" -- "${t2v[@]}" --lora "$work/garbage.safetensors"
if ls "$work"/a.mp4* >/dev/null 2>&1 || ls "$work"/.*partial* >/dev/null 2>&1; then
  flunk "a failed run left a file behind"; ls -la "$work"
fi
summary
