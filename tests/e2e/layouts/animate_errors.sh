#!/usr/bin/env bash
# Wan2.2-Animate weight files with a tensor no module has: one error line naming the file and the tensor, exit 3,
# within seconds, nothing written (on 1 and 2 ranks). From animate_convert.sh's folder CONVERTED:
#   - the original folder with a face adapter tensor renamed (linear1_q -> linear1_x), and with a Blur kernel where
#     Wan's motion encoder has no Blur (the 1x1 input convolution);
#   - the ComfyUI file with a face encoder weight lacking CausalConv1d's .conv, and with a fused key / value
#     projection of an odd number of rows.
#   animate_errors.sh GENERATE VENV SOURCE_DIR CONVERTED WORK_DIR
set -u
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; venv=$2; src=$3; conv=$4; work=$5
need_venv "$venv"
py=$(cd "$venv" && pwd)/bin/python
rm -rf "$work"; mkdir -p "$work"
seg=$src/tests/data/reference/animate-segments
tiny=$src/tests/data/reference/animate-tiny/model
flags=(--image "$seg/ref.jpg" --pose-video "$seg/pose.mp4" --face-video "$seg/face.mp4" --prompt "a dancer"
       --height 32 --width 48 --segment-frames 9 --num-inference-steps 1 --device cpu --output "$work/a.mp4")

# original COPY EDIT: the original folder with its shards rewritten by EDIT (python: sd -> sd), the rest linked.
original() {
  local dir=$work/$1
  mkdir -p "$dir"
  for f in "$conv/original"/*; do ln -s "$f" "$dir/$(basename "$f")"; done
  "$py" - "$conv/original" "$dir" "$2" <<'PY'
import json, os, sys
from safetensors.torch import load_file, save_file
src, dst, edit = sys.argv[1:]
index_name = "diffusion_pytorch_model.safetensors.index.json"
index = json.load(open(f"{src}/{index_name}"))
sd = {}
for f in sorted(set(index["weight_map"].values())):
    sd.update(load_file(f"{src}/{f}"))
    os.unlink(f"{dst}/{f}")
os.unlink(f"{dst}/{index_name}")
exec(edit)
save_file(sd, f"{dst}/diffusion_pytorch_model-00001-of-00001.safetensors")
index["weight_map"] = {k: "diffusion_pytorch_model-00001-of-00001.safetensors" for k in sd}
json.dump(index, open(f"{dst}/{index_name}", "w"))
PY
}
# comfy NAME EDIT: the ComfyUI fp32 transformer file rewritten by EDIT.
comfy() {
  "$py" - "$conv/comfy-fp32/wan2.2_animate_14B_fp32.safetensors" "$work/$1.safetensors" "$2" <<'PY'
import sys, torch
from safetensors.torch import load_file, save_file
sd = load_file(sys.argv[1])
exec(sys.argv[3])
save_file(sd, sys.argv[2])
PY
}

original renamed 'sd["face_adapter.fuser_blocks.0.linear1_x.weight"] = sd.pop("face_adapter.fuser_blocks.0.linear1_q.weight")'
expect original_unknown_key 2 3 "tensor 'face_adapter.fuser_blocks.0.linear1_x.weight' is not a tensor of a Wan2.2 transformer" \
  -- --model "$work/renamed" "${flags[@]}"
original kernel 'sd["motion_encoder.enc.net_app.convs.0.0.kernel"] = sd["motion_encoder.enc.net_app.convs.1.conv2.0.kernel"].clone()'
expect original_misplaced_blur 1 3 "tensor 'motion_encoder.enc.net_app.convs.0.0.kernel' is not a tensor of a Wan2.2 transformer" \
  -- --model "$work/kernel" "${flags[@]}"
p=model.diffusion_model.
comfy noconv "sd['${p}face_encoder.conv2.weight'] = sd.pop('${p}face_encoder.conv2.conv.weight')"
expect comfy_unknown_key 2 3 "tensor '${p}face_encoder.conv2.weight' is not a tensor of a Wan2.2 transformer" \
  -- --model "$tiny" --transformer "$work/noconv.safetensors" "${flags[@]}"
comfy oddkv "k = '${p}face_adapter.fuser_blocks.1.linear1_kv.bias'; sd[k] = torch.cat([sd[k], sd[k][:1]])"
expect comfy_odd_kv 1 3 "tensor '${p}face_adapter.fuser_blocks.1.linear1_kv.bias' of shape [49] should hold 2 equal blocks" \
  -- --model "$tiny" --transformer "$work/oddkv.safetensors" "${flags[@]}"
if ls "$work"/a.mp4* >/dev/null 2>&1; then flunk "a failed run left a file behind"; fi
summary
