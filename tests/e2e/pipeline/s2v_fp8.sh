#!/usr/bin/env bash
# Wan2.2-S2V's transformer with float8 weights, on the tiny original folder (3 blocks). The references are
# written by PyTorch from PyPI (tools/reference/foreign_layouts.py's float8 rounding), not by omni-generate:
#  1. ComfyUI's fp8_scaled file (wan2.2_s2v_14B_fp8_scaled's form: Wan's names under "model.diffusion_model.",
#     the `scaled_fp8` marker, a 0-dim float32 `scale_weight` per weight): every Linear weight of the blocks and of
#     the audio injector in float8_e4m3fn. Given with --transformer it is held as stored, and its tensors (every
#     step's latents, the frames) equal, bit for bit, those of the folder whose transformer holds the same weights
#     dequantized (float8 x scale in float32) in float32. On one rank and on HSDP 2; the report counts the file's
#     float8 weights as stored.
#  2. --weight-dtype float8_e4m3fn --fp8-layers attention on the folder quantizes, per output row (amax / 448),
#     exactly the attention weights (Wan's self_attn and cross_attn, where diffusers says attn1 and attn2) of the
#     blocks between the first and the last: its tensors equal those of the folder whose weights PyTorch rounded
#     so, and the report counts them.
#  3. --fp8-matmul on the fp8_scaled file alone (no --weight-dtype) is taken: it multiplies the stored weights.
#   s2v_fp8.sh GENERATE REFERENCE_DIR VENV WORK_DIR
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; ref=$2; venv=$3; work=$4
need_venv "$venv"
py=$venv/bin/python
rm -rf "$work"; mkdir -p "$work"
model=$ref/s2v-pipeline/model
in=$ref/s2v-pipeline/inputs

# The files: the ComfyUI fp8_scaled transformer, and two folders that differ from the source only in their
# transformer's weights (the other files linked).
"$py" - "$SOURCE_DIR/tools/reference" "$model" "$work" <<'PY' || fail "could not write the float8 files"
import os, re, sys
import torch
from safetensors.torch import load_file, save_file
sys.path.insert(0, sys.argv[1])
from foreign_layouts import fp8_quantize_tensor
model, work = sys.argv[2], sys.argv[3]
sd = load_file(f"{model}/diffusion_pytorch_model.safetensors")
def folder(name, weights):
    d = f"{work}/{name}"
    os.makedirs(d)
    for f in os.listdir(model):
        if f != "diffusion_pytorch_model.safetensors":
            os.symlink(os.path.abspath(f"{model}/{f}"), f"{d}/{f}")
    save_file(weights, f"{d}/diffusion_pytorch_model.safetensors")
# 1. ComfyUI: one scale per tensor, every Linear weight of the blocks and the audio injector.
comfy = re.compile(r"^(blocks\.\d+\.(self_attn|cross_attn)\.[qkvo]|blocks\.\d+\.ffn\.[02]|"
                   r"audio_injector\.injector\.\d+\.[qkvo]|audio_injector\.injector_adain_layers\.\d+\.linear)\.weight$")
out, dequant = {"model.diffusion_model.scaled_fp8": torch.empty(0, dtype=torch.float8_e4m3fn)}, dict(sd)
n = 0
for k, v in sd.items():
    if comfy.match(k):
        q, s = fp8_quantize_tensor(v, per_row=False)
        out["model.diffusion_model." + k] = q
        out["model.diffusion_model." + k[:-len(".weight")] + ".scale_weight"] = s
        dequant[k] = q.float() * s
        n += 1
    else:
        out["model.diffusion_model." + k] = v
save_file(out, f"{work}/wan2.2_s2v_tiny_fp8_scaled.safetensors")
folder("dequant", dequant)
# 2. At load: blocks 1 .. N-2 (here block 1 of 3), attention, one scale per row.
blocks = 1 + max(int(k.split(".")[1]) for k in sd if k.startswith("blocks."))
at_load = re.compile(r"^blocks\.(\d+)\.(self_attn|cross_attn)\.[qkvo]\.weight$")
rowq, m = dict(sd), 0
for k, v in sd.items():
    hit = at_load.match(k)
    if hit and 0 < int(hit.group(1)) < blocks - 1:
        q, s = fp8_quantize_tensor(v, per_row=True)
        rowq[k] = q.float() * s.unsqueeze(1)
        m += 1
folder("rowq", rowq)
open(f"{work}/counts", "w").write(f"{n} {m}\n")
print(f"{n} weights in float8 in the ComfyUI file, {m} quantized at load, of {blocks} blocks")
PY
read -r comfy_n load_n <"$work/counts"

common=(--device cpu --dtype float32 --vae-dtype float32 --prompt "a woman talks" --image "$in/ref_80x96.png"
        --audio "$in/audio.wav" --height 64 --width 64 --num-frames 12 --num-inference-steps 3 --guidance-scale 4.5
        --seed 3 --log-level warn)
saved_run --hsdp stored 1 --model "$model" --transformer "$work/wan2.2_s2v_tiny_fp8_scaled.safetensors"
saved_run --hsdp dequant 1 --model "$work/dequant"
saved_run --hsdp stored-np2 2 --model "$model" --transformer "$work/wan2.2_s2v_tiny_fp8_scaled.safetensors"
saved_run --hsdp dequant-np2 2 --model "$work/dequant"
saved_run --hsdp at-load 1 --model "$model" --weight-dtype float8_e4m3fn --fp8-layers attention
saved_run --hsdp rowq 1 --model "$work/rowq"
saved_run --hsdp plain 1 --model "$model"
saved_run --hsdp stored-mm 1 --model "$model" --transformer "$work/wan2.2_s2v_tiny_fp8_scaled.safetensors" --fp8-matmul

"$py" - "$work" "$comfy_n" "$load_n" <<'PY' && pass "float8 S2V: as held == dequantized (np 1, HSDP 2), at load == rounded by PyTorch, the report's counts" || flunk "float8 S2V"
import json, sys
from safetensors.torch import load_file
work, comfy_n, load_n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
t = {n: load_file(f"{work}/{n}.safetensors") for n in
     ("stored", "dequant", "stored-np2", "dequant-np2", "at-load", "rowq", "plain", "stored-mm")}
bad = []
# The last clip's final latents (the run saves clipNN.latents per clip).
last = max(k for k in t["plain"] if k.startswith("clip") and k.endswith(".latents"))
def worst(a, b):
    return max((t[a][k].double() - t[b][k].double()).abs().max().item() for k in t[a])
for a, b in (("stored", "dequant"), ("stored-np2", "dequant-np2"), ("at-load", "rowq")):
    if set(t[a]) != set(t[b]) or "frames" not in t[a] or last not in t[a]:
        bad.append(f"{a} / {b}: tensor sets differ ({sorted(set(t[a]) ^ set(t[b]))[:4]})")
        continue
    w = worst(a, b)
    print(f"{a} vs {b}: {len(t[a])} tensors, max difference {w:g}")
    if w != 0:
        bad.append(f"{a} differs from {b} ({w:g})")
# The float8 rounding must reach the run: the float8 runs differ from the plain folder's.
for a in ("stored", "at-load"):
    if (t[a][last] - t["plain"][last]).abs().max().item() == 0:
        bad.append(f"{a}: the latents of the unquantized folder (no float8 weight reached the run)")
if (t["stored-mm"][last] - t["stored"][last]).abs().max().item() == 0:
    bad.append("--fp8-matmul: the latents of the dequantized product (the flag did not reach the weights)")
want = {"stored": (comfy_n, 0), "at-load": (0, load_n), "stored-np2": (comfy_n, 0)}
for name, (stored, quantized) in want.items():
    r = json.load(open(f"{work}/{name}.json")).get("float8_weights", {})
    got = (r.get("stored"), r.get("quantized"))
    print(f"{name}: float8_weights {r}")
    if got != (stored, quantized):
        bad.append(f"{name}: report float8_weights {got}, want {(stored, quantized)}")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY
summary
