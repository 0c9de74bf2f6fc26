#!/usr/bin/env bash
# LoRA merging against weights merged independently (tools/lora/make_lora.py, float64 in PyTorch; the files and
# the commands that made them: tests/data/lora/README.md). On the t2v-a14b-tiny checkpoint:
#   --lora wan-full.safetensors:0.7 --lora peft-alpha.safetensors:-0.5 --lora-2 wan-full.safetensors
# (Wan names with alpha, diff / diff_b full deltas on a weight, a bias, a norm and a modulation table, head /
# time / text embedding names; stacked with a diffusers-named file with alpha at a negative scale) must give the
# video of the checkpoint whose transformer and transformer_2 hold the merged weights, within 1e-5 (frames and
# latents), on NP ranks with the given layout flags.
#   lora_vs_merged.sh GENERATE COMPARE MODEL_DIR LORA_DATA WORK NP [layout flags...]
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; cmp=$2; model=$3; data=$4; work=$5; np=$6; shift 6
rm -rf "$work"; mkdir -p "$work"
cp -r "$model" "$work/merged"
cp "$data/merged-transformer.safetensors" "$work/merged/transformer/diffusion_pytorch_model.safetensors"
cp "$data/merged-transformer_2.safetensors" "$work/merged/transformer_2/diffusion_pytorch_model.safetensors"
common=(--height 32 --width 48 --num-frames 5 --num-inference-steps 3 --max-sequence-length 16 --dtype float32
        --device cpu --guidance-scale 4 --guidance-scale-2 3 --seed 8 --prompt "A kite over a hill" --log-level warn)
lora=(--lora "$data/wan-full.safetensors:0.7" --lora "$data/peft-alpha.safetensors:-0.5"
      --lora-2 "$data/wan-full.safetensors")
run=("$gen" --model "$model" "${common[@]}" "${lora[@]}" --output "$work/lora.mp4"
     --save-tensors "$work/lora.safetensors" "$@")
launch "$np" "${run[@]}"
"$gen" --model "$work/merged" "${common[@]}" --output "$work/merged.mp4" --save-tensors "$work/merged.safetensors"
"$cmp" "$work/lora.safetensors" "$work/merged.safetensors" --keys frames,latents,step00.latents,step01.latents \
  --tolerance 1e-5
# The sidecar and the MP4 metadata name every file with its SHA-256 (hashlib's) and scale, per expert.
python3 - "$work/lora.mp4.json" "$data" "$work/lora.mp4" <<'PY'
import hashlib, json, sys
side, data, mp4 = json.load(open(sys.argv[1])), sys.argv[2], open(sys.argv[3], "rb").read()
def sha(p): return hashlib.sha256(open(p, "rb").read()).hexdigest()
want = {"transformer": [("wan-full.safetensors", 0.7), ("peft-alpha.safetensors", -0.5)],
        "transformer_2": [("wan-full.safetensors", 1.0)]}
for expert, files in want.items():
    got = side["lora"][expert]
    assert [(g["name"], g["scale"]) for g in got] == files, (expert, got)
    for g in got:
        assert g["sha256"] == sha(f"{data}/{g['name']}"), (g, "sha256 differs")
# The MP4's metadata (key "lora") holds the same list.
assert json.dumps(side["lora"], separators=(",", ":"), sort_keys=True).encode() in mp4, "MP4 metadata lacks the LoRA list"
print("ok: sidecar and MP4 lora entries")
PY
echo "ok: LoRA on $np rank(s) $* = merged weights"
