#!/usr/bin/env bash
# Wan2.2-S2V from ComfyUI's single files alone, without Wan-AI's folder: the transformer
# (wan2.2_s2v_14B_*.safetensors: Wan's names under "model.diffusion_model.", no config.json) and the audio encoder
# (wav2vec2_large_english_fp16.safetensors: transformers' Wav2Vec2ForCTC names under "wav2vec2.", no CTC head or
# masked_spec_embed, no config.json, no preprocessor_config.json), with --text-encoder, --vae and --tokenizer.
#  1. The model: a Wan2.2-S2V transformer with the published 40 blocks and 12 audio injectors (128 wide, one
#     head) and a 24-layer wav2vec2 of 64-wide heads, their weights rounded to float16. Its folder is the
#     original layout (config.json with Wan2.2-S2V-14B's settings, wav2vec2-large-xlsr-53-english/ written by
#     transformers' save_pretrained); its single files are the same weights in float16 (what ComfyUI ships), the
#     transformer's names checked, block and injector numbers aside, against the tiny checkpoint Wan2.2's own
#     WanModel_S2V wrote (tests/data/reference/s2v-pipeline/model).
#  2. The files alone give the folder's tensors (every clip's latents, the frames) bit for bit on one rank, and on
#     HSDP 2 within float rounding (1e-5 of each tensor's largest value); --audio-encoder's file also replaces the
#     folder's wav2vec2, or stands for it in a folder without one, bit for bit. The sidecar lists its file.
#  3. One line and exit 3, loading nothing: an S2V file whose injector layout no config states (the 3-block
#     fixture), the files without --audio-encoder, --audio-encoder on a T2V model, a VAE given as the audio encoder,
#     a folder whose wav2vec2 folder is empty.
#   s2v_files.sh GENERATE REFERENCE_DIR VENV WORK_DIR
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../lib.sh"
gen=$1; ref=$2; venv=$3; work=$4
need_venv "$venv"
py=$venv/bin/python
rm -rf "$work"; mkdir -p "$work"
fixture=$ref/s2v-pipeline/model
in=$ref/s2v-pipeline/inputs

"$py" - "$fixture" "$work" <<'PY' || fail "could not write the model"
import json, os, re, sys
import torch
from safetensors.torch import load_file, save_file
from transformers import Wav2Vec2Config, Wav2Vec2ForCTC
fixture, work = sys.argv[1], sys.argv[2]
folder, comfy = f"{work}/folder", f"{work}/comfy"
os.makedirs(folder); os.makedirs(comfy)
g = torch.Generator().manual_seed(7)
def rand(*shape, scale=0.05):
    return torch.randn(*shape, generator=g) * scale

# WanModel_S2V's tensors (docs/s2v-reference.md section 2) at D 128, F 256, wav2vec2 width A 64, 4 audio tokens.
D, F, A, n, L, K = 128, 256, 64, 4, 40, 12
layers = [0, 4, 8, 12, 16, 20, 24, 27, 30, 33, 36, 39]
sd = {}
def linear(name, out, inp):
    sd[name + ".weight"], sd[name + ".bias"] = rand(out, inp), rand(out)
def conv(name, shape):
    sd[name + ".weight"], sd[name + ".bias"] = rand(*shape), rand(shape[0])
def attention(name):
    for p in "qkvo":
        linear(f"{name}.{p}", D, D)
    for p in ("norm_q", "norm_k"):
        sd[f"{name}.{p}.weight"] = 1 + rand(D)
conv("patch_embedding", (D, 16, 1, 2, 2))
conv("cond_encoder", (D, 16, 1, 2, 2))
linear("text_embedding.0", D, 4096); linear("text_embedding.2", D, D)
linear("time_embedding.0", D, 256); linear("time_embedding.2", D, D)
linear("time_projection.1", 6 * D, D)
for b in range(L):
    sd[f"blocks.{b}.modulation"] = rand(1, 6, D)
    attention(f"blocks.{b}.self_attn"); attention(f"blocks.{b}.cross_attn")
    sd[f"blocks.{b}.norm3.weight"], sd[f"blocks.{b}.norm3.bias"] = 1 + rand(D), rand(D)
    linear(f"blocks.{b}.ffn.0", F, D); linear(f"blocks.{b}.ffn.2", D, F)
sd["head.modulation"] = rand(1, 2, D)
linear("head.head", 64, D)
sd["trainable_cond_mask.weight"] = rand(3, D)
sd["casual_audio_encoder.weights"] = rand(1, 25, 1, 1, scale=1.0)
e = "casual_audio_encoder.encoder"
conv(f"{e}.conv1_local.conv", (D // 4 * n, A, 3)); conv(f"{e}.conv1_global.conv", (D // 4, A, 3))
conv(f"{e}.conv2.conv", (D // 2, D // 4, 3)); conv(f"{e}.conv3.conv", (D, D // 2, 3))
linear(f"{e}.final_linear", D, D)
sd[f"{e}.padding_tokens"] = rand(1, 1, 1, D)
for k in range(K):
    attention(f"audio_injector.injector.{k}")
    linear(f"audio_injector.injector_adain_layers.{k}.linear", 2 * D, D)
conv("frame_packer.proj", (D, 16, 1, 2, 2)); conv("frame_packer.proj_2x", (D, 16, 2, 4, 4))
conv("frame_packer.proj_4x", (D, 16, 4, 8, 8))
# float16-exact values, so that the float16 files hold the folder's numbers.
sd = {k: v.half().float() for k, v in sd.items()}
# The same names as Wan2.2's own class wrote, block and injector numbers aside.
numbered = lambda keys: {re.sub(r"^(blocks|audio_injector\.injector(_adain_layers)?)\.\d+\.", r"\1.N.", k) for k in keys}
wan = load_file(f"{fixture}/diffusion_pytorch_model.safetensors")
if numbered(sd) != numbered(wan):
    sys.exit(f"names differ from Wan2.2's: {sorted(numbered(sd) ^ numbered(wan))[:6]}")
config = json.load(open(f"{fixture}/config.json"))
config.update(dim=D, ffn_dim=F, num_heads=1, num_layers=L, audio_dim=A, num_audio_token=n,
              audio_inject_layers=layers)
json.dump(config, open(f"{folder}/config.json", "w"), indent=2)
save_file(sd, f"{folder}/diffusion_pytorch_model.safetensors")
save_file({"model.diffusion_model." + k: v.half() for k, v in sd.items()}, f"{comfy}/wan2.2_s2v_tiny_fp16.safetensors")

# wav2vec2: 24 layers of one 64-wide head, written by transformers (Wav2Vec2ForCTC, the published folder's class).
torch.manual_seed(7)
w2v = Wav2Vec2ForCTC(Wav2Vec2Config(hidden_size=A, num_hidden_layers=24, num_attention_heads=1, intermediate_size=128,
                                    conv_dim=[32] * 7, num_conv_pos_embeddings=16, num_conv_pos_embedding_groups=4,
                                    feat_extract_norm="layer", do_stable_layer_norm=True, conv_bias=True,
                                    vocab_size=33)).eval()
with torch.no_grad():
    for p in w2v.parameters():
        p.copy_(p.half().float())
audio = f"{folder}/wav2vec2-large-xlsr-53-english"
w2v.save_pretrained(audio)
os.symlink(os.path.abspath(f"{fixture}/wav2vec2-large-xlsr-53-english/preprocessor_config.json"),
           f"{audio}/preprocessor_config.json")
stored = load_file(f"{audio}/model.safetensors")
# The file: no CTC head, and the positional kernel under the names the published folder has (transformers 4's
# weight_g / weight_v; transformers 5 writes parametrizations.weight.original0 / original1, as the folder has).
legacy = {"parametrizations.weight.original0": "weight_g", "parametrizations.weight.original1": "weight_v"}
def old_name(k):
    for new, old in legacy.items():
        k = k.replace(new, old)
    return k
# Nor SpecAugment's masked_spec_embed, which transformers makes only for a config that masks in training.
save_file({old_name(k): v.half() for k, v in stored.items()
           if k.startswith("wav2vec2.") and k != "wav2vec2.masked_spec_embed"},
          f"{comfy}/wav2vec2_tiny_english_fp16.safetensors")
for f in ("models_t5_umt5-xxl-enc-bf16.pth", "Wan2.1_VAE.pth", "google"):
    os.symlink(os.path.abspath(f"{fixture}/{f}"), f"{folder}/{f}")
print(f"{len(sd)} transformer tensors, {len(stored)} wav2vec2 tensors")
PY

alone=(--transformer "$work/comfy/wan2.2_s2v_tiny_fp16.safetensors"
       --audio-encoder "$work/comfy/wav2vec2_tiny_english_fp16.safetensors"
       --text-encoder "$fixture/models_t5_umt5-xxl-enc-bf16.pth" --vae "$fixture/Wan2.1_VAE.pth"
       --tokenizer "$fixture/google/umt5-xxl")
common=(--device cpu --dtype float32 --vae-dtype float32 --prompt "a woman talks" --image "$in/ref_80x96.png"
        --audio "$in/audio.wav" --height 64 --width 64 --num-frames 12 --num-inference-steps 2 --guidance-scale 4.5
        --seed 3 --log-level warn)
saved_run --hsdp folder 1 --model "$work/folder"
saved_run --hsdp alone 1 "${alone[@]}"
saved_run --hsdp alone-np2 2 "${alone[@]}"
saved_run --hsdp w2v-file 1 --model "$work/folder" --audio-encoder "$work/comfy/wav2vec2_tiny_english_fp16.safetensors"
# A folder downloaded without its wav2vec2: the file gives it.
mkdir -p "$work/no-w2v"
for f in "$work"/folder/*; do [ "$(basename "$f")" = wav2vec2-large-xlsr-53-english ] || ln -s "$f" "$work/no-w2v/"; done
saved_run --hsdp no-w2v 1 --model "$work/no-w2v" --audio-encoder "$work/comfy/wav2vec2_tiny_english_fp16.safetensors"

"$py" - "$work" <<'PY' && pass "ComfyUI's S2V files alone: the folder's tensors (np 1 exact, HSDP 2 within 1e-5 relative)" || flunk "ComfyUI's S2V files alone"
import json, sys
from safetensors.torch import load_file
work = sys.argv[1]
t = {n: load_file(f"{work}/{n}.safetensors") for n in ("folder", "alone", "alone-np2", "w2v-file", "no-w2v")}
bad = []
for name, tol in (("alone", 0.0), ("w2v-file", 0.0), ("no-w2v", 0.0), ("alone-np2", 1e-5)):
    a, b = t[name], t["folder"]
    if set(a) != set(b) or "frames" not in a or not any(k.endswith(".latents") for k in a):
        bad.append(f"{name}: tensor sets differ ({sorted(set(a) ^ set(b))[:4]})")
        continue
    # Relative to each tensor's largest value: the ranks' one OpenMP thread sums in another order than two.
    worst = max(((a[k].double() - b[k].double()).abs().max() / b[k].double().abs().max().clamp(min=1e-12)).item()
                for k in a)
    print(f"{name} vs folder: {len(a)} tensors, max relative difference {worst:g}")
    if worst > tol:
        bad.append(f"{name}: differs from the folder's run by {worst:g} relative (allowed {tol:g})")
files = json.load(open(f"{work}/alone.mp4.json"))["model_files"]
audio = [f for f in files if f["component"] == "audio_encoder"]
if [f["file"] for f in audio] != [f"{work}/comfy/wav2vec2_tiny_english_fp16.safetensors"]:
    bad.append(f"the sidecar's model_files list no audio encoder file: {files}")
for b in bad:
    print("FAIL:", b)
sys.exit(1 if bad else 0)
PY

# The 3-block fixture as a ComfyUI-style file: no config states which blocks its 2 injectors follow.
"$py" - "$fixture/diffusion_pytorch_model.safetensors" "$work/comfy/s2v_3blocks.safetensors" <<'PY'
import sys
from safetensors.torch import load_file, save_file
save_file({"model.diffusion_model." + k: v for k, v in load_file(sys.argv[1]).items()}, sys.argv[2])
PY
others=(--text-encoder "$fixture/models_t5_umt5-xxl-enc-bf16.pth" --vae "$fixture/Wan2.1_VAE.pth"
        --tokenizer "$fixture/google/umt5-xxl" --image "$in/ref_80x96.png" --audio "$in/audio.wav" --prompt x
        --output "$work/e.mp4")
expect s2v_file_unknown_layers 2 3 "of 3 blocks and 2 audio injectors without its config.json" -- \
  --transformer "$work/comfy/s2v_3blocks.safetensors" \
  --audio-encoder "$work/comfy/wav2vec2_tiny_english_fp16.safetensors" "${others[@]}"
expect s2v_files_no_audio_encoder 1 3 "transformer without its wav2vec2 and no --audio-encoder" -- \
  --transformer "$work/comfy/wan2.2_s2v_tiny_fp16.safetensors" "${others[@]}"
expect audio_encoder_on_t2v 2 3 "only Wan2.2-S2V takes an audio encoder" -- --model "$ref/t2v-a14b-tiny/model" \
  --prompt x --audio-encoder "$work/comfy/wav2vec2_tiny_english_fp16.safetensors" --output "$work/e.mp4"
expect audio_encoder_not_wav2vec2 1 3 "not a wav2vec2 audio encoder" -- \
  --transformer "$work/comfy/wan2.2_s2v_tiny_fp16.safetensors" --audio-encoder "$fixture/Wan2.1_VAE.pth" \
  "${others[@]}"
# A folder whose wav2vec2 folder is there but empty: named as incomplete, not as missing.
mkdir -p "$work/empty-w2v/wav2vec2-large-xlsr-53-english"
for f in "$work"/folder/*; do [ "$(basename "$f")" = wav2vec2-large-xlsr-53-english ] || ln -s "$f" "$work/empty-w2v/"; done
expect s2v_folder_incomplete_wav2vec2 1 3 "wav2vec2-large-xlsr-53-english: incomplete: expected config.json" -- \
  --model "$work/empty-w2v" --image "$in/ref_80x96.png" --audio "$in/audio.wav" --prompt x --output "$work/e.mp4"
summary
