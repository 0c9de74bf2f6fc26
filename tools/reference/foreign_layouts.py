#!/usr/bin/env python3
"""Write a diffusers Wan2.2 pipeline folder's weights in two foreign layouts.

Test-data tool: our C++ loader must read Wan2.2 weights laid out as
  (1) the ORIGINAL Wan-AI repositories (what Wan-Video/Wan2.2's generate.py reads), and
  (2) ComfyUI single files (Comfy-Org/Wan_2.2_ComfyUI_Repackaged),
but real weights cannot be downloaded here. From a diffusers pipeline folder (tiny
random-weight checkpoints) this writes the SAME weights in those layouts, following the
public name tables (diffusers' single_file_utils.convert_wan_transformer_to_diffusers /
convert_wan_vae_to_diffusers, scripts/convert_wan_to_diffusers.py convert_vae_22, and the
module trees of Wan2.2's wan/modules/{model,t5,vae2_1,vae2_2}.py). check_foreign_layouts.py
proves the result right independently.

    foreign_layouts.py original SRC OUT [--dtype keep|bf16|fp16|fp32] [--shard-bytes N]
                                        [--model-type t2v|i2v|ti2v]
    foreign_layouts.py clip SRC OUT --names wan|open_clip [--dtype keep|bf16|fp16|fp32]
    foreign_layouts.py comfy SRC OUT --dtype fp16|bf16|fp32|fp8_scaled
                                     [--prefix model.diffusion_model.|none] [--spiece]
                                     [--new-style] [--input-scale] [--fp8-rest fp16|bf16|fp32]

ORIGINAL layout (OUT/):
  high_noise_model/ (from transformer/), low_noise_model/ (from transformer_2/) for
  two-expert pipelines; OUT/ itself for single-transformer ones (ti2v-5B). Each holds
  config.json (WanModel: _class_name, _diffusers_version, dim, eps, ffn_dim, freq_dim,
  in_dim, model_type, num_heads, num_layers, out_dim, text_len -- the published key set;
  text_dim / patch_size / qk_norm / cross_attn_norm / window_size are added ONLY when they
  differ from WanModel's defaults, as they do for tiny test models (text_dim)), plus
  diffusion_pytorch_model-0000N-of-0000M.safetensors and
  diffusion_pytorch_model.safetensors.index.json (HF sharding; always >= 2 shards when
  there are >= 2 tensors, so the index path is exercised).
  models_t5_umt5-xxl-enc-bf16.pth: torch.save of the Wan T5Encoder state dict (the name
  says bf16; with --dtype keep the source dtype is written anyway).
  Wan2.1_VAE.pth (z_dim 16) or Wan2.2_VAE.pth (z_dim 48): torch.save of the VAE state dict.
  Wan2.2-Animate (a WanAnimateTransformer3DModel source): config.json is WanAnimateModel's (every __init__
  argument, animate_wan_config), the transformer's Animate modules in Wan's names (animate_to_original: motion
  encoder with its [1, C, 1, 1] activation biases and Blur kernel buffers, face encoder, face adapters with the
  fused linear1_kv), proven by diffusers' own converter (check_foreign_layouts.py).
  google/umt5-xxl/: a copy of tokenizer/.
  models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth (Wan2.1's image models, from image_encoder/): Wan's
  own CLIP names (WAN_CLIP_PTH below); `clip` writes it, or open_clip's open_clip_pytorch_model.bin, alone.
  --dtype applies to every tensor written (transformer, T5, VAE).

COMFY layout (OUT/):
  wan2.2_{t2v,i2v}_{high,low}_noise_14B_<dt>.safetensors, wan2.2_ti2v_5B_<dt>.safetensors or
  wan2.2_animate_14B_<dt>.safetensors (ComfyUI's comfy/ldm/wan/model_animate.py keeps Wan's names):
    original transformer names, prefixed with --prefix (default "model.diffusion_model.").
  umt5_xxl_<dt>.safetensors (fp8_scaled: umt5_xxl_fp8_e4m3fn_scaled.safetensors): HF T5
    encoder names as in transformers (shared.weight, encoder.block.N.layer..., 
    encoder.final_layer_norm.weight; encoder.embed_tokens.weight is NOT written, it is tied
    to shared.weight). --spiece adds uint8 `spiece_model` = bytes of tokenizer/spiece.model.
  wan_2.1_vae.safetensors (z_dim 16) or wan2.2_vae.safetensors (z_dim 48): original VAE
    names, no prefix. Never fp8: fp16/bf16/fp32 follow --dtype; with fp8_scaled the VAE is
    written in bf16 (Comfy-Org publishes one 2-byte VAE file next to the fp8 models; our
    choice, not verifiable from source code).
  <dt> is fp16 / bf16 / fp32 / fp8_scaled.

fp8_scaled (ComfyUI "scaled_fp8" format, comfy/ops.py scaled_fp8_ops):
  quantised: every 2-D Linear weight inside the transformer blocks
    (blocks.N.{self_attn,cross_attn}.{q,k,v,o}.weight, blocks.N.ffn.{0,2}.weight; also
    cross_attn.{k_img,v_img}.weight if present; Animate's face_adapter.fuser_blocks.N.{linear1_kv,
    linear1_q,linear2}.weight) and inside the T5 blocks
    (encoder.block.N.layer.0.SelfAttention.{q,k,v,o}.weight,
    encoder.block.N.layer.1.DenseReluDense.{wi_0,wi_1,wo}.weight):
      scale = amax(|w|) / 448 (1.0 when amax == 0), 0-dim float32 `<module>.scale_weight`
      (--fp8-scale row: per output row, [rows] float32; --fp8-keys REGEX: other weights than these)
      weight = (w / scale).clamp(-448, 448).to(float8_e4m3fn); dequant = fp8.float() * scale
    --input-scale also writes 0-dim float32 `<module>.scale_input` = 1.0.
  marker: `scaled_fp8` = torch.empty(0, dtype=float8_e4m3fn) (shape [0]); in the transformer
    file it carries the --prefix (comfy/model_detection.py pops "{unet_prefix}scaled_fp8"),
    in the T5 file it is the bare top-level key "scaled_fp8".
  everything else (embeddings, text/time embedding and head Linears, patch_embedding conv,
    modulation, norms, biases, relative_attention_bias, shared) is written in --fp8-rest
    (default fp16).
  --new-style (comfy quant / comfy-kitchen layout) instead writes `<module>.weight_scale`
    (0-dim float32), optional `<module>.input_scale`, and `<module>.comfy_quant` = uint8
    tensor of the UTF-8 JSON bytes {"format": "float8_e4m3fn"}; no `scaled_fp8` marker.

Importable: to_original_transformer(sd), to_original_vae(sd, z_dim), to_wan_t5(sd),
quantize_fp8_scaled(sd, which_keys, ...), plus load_diffusers_component(dir).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

FP8_MAX = 448.0

# --------------------------------------------------------------------------------------
# Transformer: diffusers WanTransformer3DModel -> original WanModel names
# (inverse of diffusers single_file_utils.convert_wan_transformer_to_diffusers)
# --------------------------------------------------------------------------------------

# top-level (non-block) renames, exact prefixes
_TRANSFORMER_TOP = [
    ("condition_embedder.time_embedder.linear_1.", "time_embedding.0."),
    ("condition_embedder.time_embedder.linear_2.", "time_embedding.2."),
    ("condition_embedder.text_embedder.linear_1.", "text_embedding.0."),
    ("condition_embedder.text_embedder.linear_2.", "text_embedding.2."),
    ("condition_embedder.time_proj.", "time_projection.1."),
    ("condition_embedder.image_embedder.norm1.", "img_emb.proj.0."),
    ("condition_embedder.image_embedder.ff.net.0.proj.", "img_emb.proj.1."),
    ("condition_embedder.image_embedder.ff.net.2.", "img_emb.proj.3."),
    ("condition_embedder.image_embedder.norm2.", "img_emb.proj.4."),
    ("condition_embedder.image_embedder.pos_embed", "img_emb.emb_pos"),
    ("patch_embedding.", "patch_embedding."),
    ("vace_patch_embedding.", "vace_patch_embedding."),
    ("proj_out.", "head.head."),
    ("scale_shift_table", "head.modulation"),
]

# inside blocks.N.
_TRANSFORMER_BLOCK = [
    ("attn1.to_q.", "self_attn.q."),
    ("attn1.to_k.", "self_attn.k."),
    ("attn1.to_v.", "self_attn.v."),
    ("attn1.to_out.0.", "self_attn.o."),
    ("attn1.norm_q.", "self_attn.norm_q."),
    ("attn1.norm_k.", "self_attn.norm_k."),
    ("attn2.to_q.", "cross_attn.q."),
    ("attn2.to_k.", "cross_attn.k."),
    ("attn2.to_v.", "cross_attn.v."),
    ("attn2.to_out.0.", "cross_attn.o."),
    ("attn2.norm_q.", "cross_attn.norm_q."),
    ("attn2.norm_k.", "cross_attn.norm_k."),
    ("attn2.add_k_proj.", "cross_attn.k_img."),
    ("attn2.add_v_proj.", "cross_attn.v_img."),
    ("attn2.norm_added_k.", "cross_attn.norm_k_img."),
    # diffusers norm2 = the cross-attention LayerNorm (affine) = original norm3.
    # original norm2 (pre-FFN, no params) = diffusers norm3 (no params): nothing to write.
    ("norm2.", "norm3."),
    ("ffn.net.0.proj.", "ffn.0."),
    ("ffn.net.2.", "ffn.2."),
    ("scale_shift_table", "modulation"),
]

# VACE blocks (Wan2.1's VaceWanAttentionBlock; diffusers' convert_wan_to_diffusers: before_proj -> proj_in,
# after_proj -> proj_out): the block names above plus these.
_VACE_BLOCK = [("proj_in.", "before_proj."), ("proj_out.", "after_proj.")] + _TRANSFORMER_BLOCK

_BLOCK_RE = re.compile(r"^(blocks|vace_blocks)\.(\d+)\.(.+)$")


def transformer_key_to_original(key: str) -> str:
    m = _BLOCK_RE.match(key)
    if m:
        kind, n, rest = m.groups()
        for a, b in (_VACE_BLOCK if kind == "vace_blocks" else _TRANSFORMER_BLOCK):
            if rest.startswith(a):
                return f"{kind}.{n}.{b}{rest[len(a):]}"
        raise KeyError(f"transformer: no rule for block key {key!r}")
    for a, b in _TRANSFORMER_TOP:
        if key == a or (a.endswith(".") and key.startswith(a)):
            return b + key[len(a):]
    raise KeyError(f"transformer: no rule for key {key!r}")


# Wan2.2-Animate (diffusers WanAnimateTransformer3DModel -> Wan's WanAnimateModel, wan/modules/animate/
# {model_animate,motion_encoder,face_blocks}.py): the inverse of diffusers' scripts/convert_wan_to_diffusers.py
# ANIMATE_TRANSFORMER_KEYS_RENAME_DICT with its handlers convert_animate_motion_encoder_weights (ConvLayer
# Sequential indices, [1, C, 1, 1] FusedLeakyReLU biases, the Blur kernel buffers it drops) and
# convert_animate_face_adapter_weights (linear1_kv = cat(to_k, to_v)). check_foreign_layouts.py runs that converter
# on what this writes.
ANIMATE_ROOTS = ("pose_patch_embedding.", "motion_encoder.", "face_encoder.", "face_adapter.")
# Wan's Blur kernel (motion_encoder.py make_kernel([1, 3, 3, 1])): outer product, normalised to sum 1; a persistent
# buffer of every downsampling ConvLayer (ResBlock conv2 and skip), so in Wan's state dict.
BLUR_KERNEL = torch.outer(torch.tensor([1.0, 3.0, 3.0, 1.0]), torch.tensor([1.0, 3.0, 3.0, 1.0])) / 64.0
_FACE_ADAPTER = {"to_q": "linear1_q", "to_out": "linear2", "norm_q": "q_norm", "norm_k": "k_norm"}


def animate_to_original(sd: dict) -> dict:
    """The Animate-only tensors of a diffusers WanAnimateTransformer3DModel state dict in Wan's names."""
    me = "motion_encoder.enc.net_app.convs."
    res = _count(sd, r"^motion_encoder\.res_blocks\.(\d+)\.")
    out = {}
    for k, v in sd.items():
        if not k.startswith(ANIMATE_ROOTS):
            continue
        if k.startswith("pose_patch_embedding."):
            out[k] = v
            continue
        if k == "motion_encoder.motion_synthesis_weight":
            out["motion_encoder.dec.direction.weight"] = v
            continue
        m = re.match(r"^motion_encoder\.motion_network\.(\d+)\.(weight|bias)$", k)
        if m:
            out[f"motion_encoder.enc.fc.{m.group(1)}.{m.group(2)}"] = v
            continue
        if k == "motion_encoder.conv_in.weight":
            out[me + "0.0.weight"] = v
            continue
        if k == "motion_encoder.conv_in.act_fn.bias":
            out[me + "0.1.bias"] = v.reshape(1, -1, 1, 1)
            continue
        if k == "motion_encoder.conv_out.weight":
            out[f"{me}{res + 1}.weight"] = v
            continue
        m = re.match(r"^motion_encoder\.res_blocks\.(\d+)\.(.+)$", k)
        if m:
            conv = f"{me}{int(m.group(1)) + 1}."
            rest = {"conv1.weight": "conv1.0.weight", "conv1.act_fn.bias": "conv1.1.bias",
                    "conv2.weight": "conv2.1.weight", "conv2.act_fn.bias": "conv2.2.bias",
                    "conv_skip.weight": "skip.1.weight"}[m.group(2)]
            out[conv + rest] = v.reshape(1, -1, 1, 1) if rest.endswith(".bias") else v
            continue
        m = re.match(r"^face_encoder\.(conv1_local|conv2|conv3)\.(weight|bias)$", k)
        if m:
            out[f"face_encoder.{m.group(1)}.conv.{m.group(2)}"] = v
            continue
        if k.startswith(("face_encoder.out_proj.", "face_encoder.padding_tokens")):
            out[k] = v
            continue
        m = re.match(r"^face_adapter\.(\d+)\.(to_q|to_k|to_v|to_out|norm_q|norm_k)\.(weight|bias)$", k)
        if not m:
            raise KeyError(f"transformer: no Animate rule for {k!r}")
        j, layer, param = m.groups()
        block = f"face_adapter.fuser_blocks.{j}."
        if layer == "to_k":
            # FaceBlock views linear1_kv's output as (K H D), K = 2 outermost: keys first, then values.
            out[f"{block}linear1_kv.{param}"] = torch.cat([v, sd[f"face_adapter.{j}.to_v.{param}"]], 0)
        elif layer != "to_v":
            out[f"{block}{_FACE_ADAPTER[layer]}.{param}"] = v
    for i in range(1, res + 1):  # the Blur buffers, in the dtype of the weights beside them
        dt = sd["motion_encoder.conv_in.weight"].dtype
        out[f"{me}{i}.conv2.0.kernel"] = BLUR_KERNEL.to(dt).clone()
        out[f"{me}{i}.skip.0.kernel"] = BLUR_KERNEL.to(dt).clone()
    return out


def to_original_transformer(state_dict: dict) -> dict:
    out = {}
    for k, v in state_dict.items():
        if k.startswith(ANIMATE_ROOTS):
            continue
        nk = transformer_key_to_original(k)
        if nk in out:
            raise KeyError(f"transformer: two keys map to {nk!r}")
        out[nk] = v
    for nk, v in animate_to_original(state_dict).items():
        if nk in out:
            raise KeyError(f"transformer: two keys map to {nk!r}")
        out[nk] = v
    return out


# --------------------------------------------------------------------------------------
# VAE: diffusers AutoencoderKLWan -> original WanVAE_ names (vae2_1.py / vae2_2.py)
# --------------------------------------------------------------------------------------

# ResidualBlock: residual = Sequential(RMS_norm, SiLU, CausalConv3d, RMS_norm, SiLU,
# Dropout, CausalConv3d), shortcut = CausalConv3d(1x1x1) or Identity.
_RESNET = [
    ("norm1.", "residual.0."),
    ("conv1.", "residual.2."),
    ("norm2.", "residual.3."),
    ("conv2.", "residual.6."),
    ("conv_shortcut.", "shortcut."),
]


def _resnet(rest: str, key: str) -> str:
    for a, b in _RESNET:
        if rest.startswith(a):
            return b + rest[len(a):]
    raise KeyError(f"vae: no resnet rule for {key!r}")


def _vae_common(key: str):
    """Keys shared by 2.1 and 2.2; returns None when the key is stage-specific."""
    for side in ("encoder", "decoder"):
        p = side + "."
        if not key.startswith(p):
            continue
        rest = key[len(p):]
        if rest.startswith("conv_in."):
            return f"{side}.conv1.{rest[len('conv_in.'):]}"
        if rest.startswith("norm_out."):
            return f"{side}.head.0.{rest[len('norm_out.'):]}"
        if rest.startswith("conv_out."):
            return f"{side}.head.2.{rest[len('conv_out.'):]}"
        m = re.match(r"^mid_block\.resnets\.(\d+)\.(.+)$", rest)
        if m:
            i = int(m.group(1))
            return f"{side}.middle.{2 * i}.{_resnet(m.group(2), key)}"
        m = re.match(r"^mid_block\.attentions\.0\.(.+)$", rest)
        if m:  # AttentionBlock: norm (RMS_norm), to_qkv, proj -- same names
            return f"{side}.middle.1.{m.group(1)}"
        return None
    if key.startswith("quant_conv."):
        return "conv1." + key[len("quant_conv."):]
    if key.startswith("post_quant_conv."):
        return "conv2." + key[len("post_quant_conv."):]
    raise KeyError(f"vae: no rule for {key!r}")


def _count(keys, pattern):
    idx = set()
    rx = re.compile(pattern)
    for k in keys:
        m = rx.match(k)
        if m:
            idx.add(int(m.group(1)))
    return (max(idx) + 1) if idx else 0


def to_original_vae(sd: dict, z_dim: int) -> dict:
    """z_dim 16 -> Wan2.1 VAE layout (vae2_1.py), z_dim 48 -> Wan2.2 VAE (vae2_2.py)."""
    keys = list(sd)
    is22 = z_dim == 48 or any(".downsampler." in k or ".upsampler." in k for k in keys)
    n_up = _count(keys, r"^decoder\.up_blocks\.(\d+)\.")
    # resnets per decoder up block (num_res_blocks + 1) and whether it has an upsampler
    up_res = [_count(keys, rf"^decoder\.up_blocks\.{b}\.resnets\.(\d+)\.") for b in range(n_up)]
    up_has = [any(k.startswith(f"decoder.up_blocks.{b}.upsampler") for k in keys) for b in range(n_up)]
    out = {}
    for k, v in sd.items():
        nk = _vae_common(k)
        if nk is None:
            if k.startswith("encoder.down_blocks."):
                if not is22:
                    # 2.1: diffusers down_blocks is the same flat list as downsamples
                    m = re.match(r"^encoder\.down_blocks\.(\d+)\.(.+)$", k)
                    j, rest = m.groups()
                    if rest.startswith(("resample.", "time_conv.")):
                        nk = f"encoder.downsamples.{j}.{rest}"
                    else:
                        nk = f"encoder.downsamples.{j}.{_resnet(rest, k)}"
                else:
                    m = re.match(r"^encoder\.down_blocks\.(\d+)\.resnets\.(\d+)\.(.+)$", k)
                    if m:
                        i, r, rest = m.groups()
                        nk = f"encoder.downsamples.{i}.downsamples.{r}.{_resnet(rest, k)}"
                    else:
                        m = re.match(r"^encoder\.down_blocks\.(\d+)\.downsampler\.(.+)$", k)
                        if not m:
                            raise KeyError(f"vae: no rule for {k!r}")
                        i, rest = m.groups()
                        nres = _count(keys, rf"^encoder\.down_blocks\.{i}\.resnets\.(\d+)\.")
                        nk = f"encoder.downsamples.{i}.downsamples.{nres}.{rest}"
            elif k.startswith("decoder.up_blocks."):
                m = re.match(r"^decoder\.up_blocks\.(\d+)\.resnets\.(\d+)\.(.+)$", k)
                if m:
                    b, r, rest = int(m.group(1)), int(m.group(2)), m.group(3)
                    if is22:
                        nk = f"decoder.upsamples.{b}.upsamples.{r}.{_resnet(rest, k)}"
                    else:
                        flat = sum(up_res[i] + up_has[i] for i in range(b)) + r
                        nk = f"decoder.upsamples.{flat}.{_resnet(rest, k)}"
                else:
                    m = re.match(r"^decoder\.up_blocks\.(\d+)\.(upsamplers\.0|upsampler)\.(.+)$", k)
                    if not m:
                        raise KeyError(f"vae: no rule for {k!r}")
                    b, rest = int(m.group(1)), m.group(3)
                    if is22:
                        nk = f"decoder.upsamples.{b}.upsamples.{up_res[b]}.{rest}"
                    else:
                        flat = sum(up_res[i] + up_has[i] for i in range(b)) + up_res[b]
                        nk = f"decoder.upsamples.{flat}.{rest}"
            else:
                raise KeyError(f"vae: no rule for {k!r}")
        if nk in out:
            raise KeyError(f"vae: two keys map to {nk!r}")
        out[nk] = v
    return out


# --------------------------------------------------------------------------------------
# T5: transformers UMT5EncoderModel (HF T5 names) -> Wan T5Encoder (wan/modules/t5.py)
# --------------------------------------------------------------------------------------

_T5_BLOCK = [
    ("layer.0.SelfAttention.q.", "attn.q."),
    ("layer.0.SelfAttention.k.", "attn.k."),
    ("layer.0.SelfAttention.v.", "attn.v."),
    ("layer.0.SelfAttention.o.", "attn.o."),
    ("layer.0.SelfAttention.relative_attention_bias.", "pos_embedding.embedding."),
    ("layer.0.layer_norm.", "norm1."),
    ("layer.1.DenseReluDense.wi_0.", "ffn.gate.0."),  # gelu branch
    ("layer.1.DenseReluDense.wi_1.", "ffn.fc1."),     # linear branch
    ("layer.1.DenseReluDense.wo.", "ffn.fc2."),
    ("layer.1.layer_norm.", "norm2."),
]


def t5_key_to_wan(key: str):
    if key == "shared.weight":
        return "token_embedding.weight"
    if key == "encoder.embed_tokens.weight":
        return None  # tied to shared.weight
    if key.startswith("encoder.final_layer_norm."):
        return "norm." + key[len("encoder.final_layer_norm."):]
    m = re.match(r"^encoder\.block\.(\d+)\.(.+)$", key)
    if m:
        n, rest = m.groups()
        for a, b in _T5_BLOCK:
            if rest.startswith(a):
                return f"blocks.{n}.{b}{rest[len(a):]}"
    raise KeyError(f"t5: no rule for {key!r}")


def to_wan_t5(sd: dict) -> dict:
    out = {}
    for k, v in sd.items():
        nk = t5_key_to_wan(k)
        if nk is None:
            continue
        if nk in out:
            raise KeyError(f"t5: two keys map to {nk!r}")
        out[nk] = v
    if "token_embedding.weight" not in out and "encoder.embed_tokens.weight" in sd:
        out["token_embedding.weight"] = sd["encoder.embed_tokens.weight"]
    return out


def t5_comfy_sd(sd: dict) -> dict:
    """HF names as ComfyUI's umt5_xxl files carry them: drop the tied embed_tokens copy."""
    out = {k: v for k, v in sd.items() if k != "encoder.embed_tokens.weight"}
    if "shared.weight" not in out and "encoder.embed_tokens.weight" in sd:
        out["shared.weight"] = sd["encoder.embed_tokens.weight"]
    return out


# --------------------------------------------------------------------------------------
# fp8 scaled
# --------------------------------------------------------------------------------------

# Every Linear weight of the blocks, VACE's (vace_blocks.N, with before_proj / after_proj) included.
# Wan2.2-Animate's face adapters' Linears too (the fused linear1_kv: one scale for its key and value halves).
TRANSFORMER_FP8_RE = re.compile(
    r"^(?:(?:vace_)?blocks\.\d+\.(self_attn\.[qkvo]|cross_attn\.(?:[qkvo]|k_img|v_img)|ffn\.[02]|before_proj|after_proj)"
    r"|face_adapter\.fuser_blocks\.\d+\.(?:linear1_kv|linear1_q|linear2))\.weight$")
T5_FP8_RE = re.compile(
    r"^encoder\.block\.\d+\.layer\.(0\.SelfAttention\.[qkvo]|1\.DenseReluDense\.(?:wi_0|wi_1|wo))\.weight$")


def fp8_quantize_tensor(w: torch.Tensor, per_row=False):
    """float8 e4m3 bytes and float32 scale(s) amax / 448 (1 where amax is 0): one 0-dim scale for the tensor, or
    with per_row one per output row, shape [rows]."""
    wf = w.detach().to(torch.float32)
    if per_row:
        amax = wf.abs().amax(dim=1)
        scale_t = torch.where(amax > 0, amax / FP8_MAX, torch.ones_like(amax))
        q = (wf / scale_t.unsqueeze(1)).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
        return q, scale_t
    amax = wf.abs().max().item() if wf.numel() else 0.0
    scale = amax / FP8_MAX if amax > 0 else 1.0
    scale_t = torch.tensor(scale, dtype=torch.float32)
    q = (wf / scale_t).clamp(-FP8_MAX, FP8_MAX).to(torch.float8_e4m3fn)
    return q, scale_t


def quantize_fp8_scaled(sd: dict, which_keys, rest_dtype=torch.float16, new_style=False,
                        input_scale=False, per_row=False) -> dict:
    """which_keys: iterable of weight keys or a callable(key)->bool or a compiled regex."""
    if callable(which_keys):
        pick = which_keys
    elif hasattr(which_keys, "match"):
        pick = lambda k: which_keys.match(k) is not None  # noqa: E731
    else:
        s = set(which_keys)
        pick = lambda k: k in s  # noqa: E731
    out = {}
    for k, v in sd.items():
        if pick(k) and v.dim() == 2 and k.endswith(".weight"):
            mod = k[: -len(".weight")]
            q, s = fp8_quantize_tensor(v, per_row)
            out[k] = q
            if new_style:
                out[mod + ".weight_scale"] = s
                if input_scale:
                    out[mod + ".input_scale"] = torch.tensor(1.0, dtype=torch.float32)
                out[mod + ".comfy_quant"] = torch.tensor(
                    list(json.dumps({"format": "float8_e4m3fn"}).encode()), dtype=torch.uint8)
            else:
                out[mod + ".scale_weight"] = s
                if input_scale:
                    out[mod + ".scale_input"] = torch.tensor(1.0, dtype=torch.float32)
        else:
            out[k] = v.to(rest_dtype) if v.is_floating_point() else v
    return out


# --------------------------------------------------------------------------------------
# I/O helpers
# --------------------------------------------------------------------------------------

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def load_diffusers_component(d: Path) -> dict:
    d = Path(d)
    idx = sorted(d.glob("*.safetensors.index.json"))
    if idx:
        wm = json.loads(idx[0].read_text())["weight_map"]
        sd = {}
        for f in sorted(set(wm.values())):
            sd.update(load_file(str(d / f)))
        return sd
    files = sorted(d.glob("*.safetensors"))
    if not files:
        raise FileNotFoundError(f"no safetensors in {d}")
    sd = {}
    for f in files:
        sd.update(load_file(str(f)))
    return sd


def _cast(sd: dict, dtype) -> dict:
    out = {}
    for k, v in sd.items():
        v = v.to(dtype) if (dtype is not None and v.is_floating_point()) else v
        out[k] = v.contiguous().clone()
    return out


class _Staging:
    """Write into OUT/.partial-XXXX, move into place on success, remove on error."""

    def __init__(self, out: Path):
        self.out = Path(out)

    def __enter__(self):
        self.out.mkdir(parents=True, exist_ok=True)
        self.tmp = Path(tempfile.mkdtemp(prefix=".partial-", dir=self.out))
        return self.tmp

    def __exit__(self, et, ev, tb):
        if et is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            return False
        for p in sorted(self.tmp.iterdir()):
            dst = self.out / p.name
            if dst.is_dir() and not dst.is_symlink():
                shutil.rmtree(dst)
            elif dst.exists():
                dst.unlink()
            os.replace(p, dst)
        self.tmp.rmdir()
        return False


def _nbytes(t):
    return t.numel() * t.element_size()


def save_sharded(sd: dict, d: Path, shard_bytes: int, base="diffusion_pytorch_model"):
    keys = sorted(sd)
    shards, cur, size = [], [], 0
    for k in keys:
        n = _nbytes(sd[k])
        if cur and size + n > shard_bytes:
            shards.append(cur)
            cur, size = [], 0
        cur.append(k)
        size += n
    if cur:
        shards.append(cur)
    if len(shards) == 1 and len(keys) >= 2:  # force >= 2 shards: exercise the index path
        half = len(keys) // 2
        shards = [keys[:half], keys[half:]]
    m = len(shards)
    wm = {}
    for i, ks in enumerate(shards, 1):
        fn = f"{base}-{i:05d}-of-{m:05d}.safetensors"
        save_file({k: sd[k] for k in ks}, str(d / fn), metadata={"format": "pt"})
        for k in ks:
            wm[k] = fn
    index = {"metadata": {"total_size": sum(_nbytes(v) for v in sd.values())},
             "weight_map": dict(sorted(wm.items()))}
    (d / f"{base}.safetensors.index.json").write_text(json.dumps(index, indent=2) + "\n")
    return m


WANMODEL_DEFAULTS = {"text_dim": 4096, "patch_size": [1, 2, 2], "qk_norm": True,
                     "cross_attn_norm": True, "window_size": [-1, -1]}


def animate_wan_config(tcfg: dict) -> dict:
    """Wan2.2-Animate-14B's config.json: what WanAnimateModel (a diffusers ModelMixin whose __init__ is
    register_to_config'd, wan/modules/animate/model_animate.py) saves, every argument of its __init__. Its motion
    encoder, face encoder and face adapter sizes are not arguments (Generator(size=512, style_dim=512,
    motion_dim=20), FaceEncoder(num_heads=4) of width 1024, num_layers // 5 FaceBlocks): the weights' shapes tell
    them, as they do for a tiny test model."""
    heads = tcfg["num_attention_heads"]
    cfg = {
        "_class_name": "WanAnimateModel",
        "_diffusers_version": "0.35.1",
        "patch_size": list(tcfg["patch_size"]),
        "text_len": 512,
        "in_dim": tcfg["in_channels"],
        "dim": heads * tcfg["attention_head_dim"],
        "ffn_dim": tcfg["ffn_dim"],
        "freq_dim": tcfg["freq_dim"],
        "text_dim": tcfg["text_dim"],
        "out_dim": tcfg["out_channels"],
        "num_heads": heads,
        "num_layers": tcfg["num_layers"],
        "window_size": [-1, -1],
        "qk_norm": tcfg.get("qk_norm") is not None,
        "cross_attn_norm": bool(tcfg.get("cross_attn_norm", True)),
        "eps": tcfg["eps"],
        "motion_encoder_dim": tcfg["motion_encoder_dim"],
        "use_context_parallel": False,
        "use_img_emb": True,
    }
    return dict(sorted(cfg.items()))


def wan_config(tcfg: dict, model_type: str) -> dict:
    if tcfg.get("_class_name") == "WanAnimateTransformer3DModel":
        return animate_wan_config(tcfg)
    heads = tcfg["num_attention_heads"]
    cfg = {
        "_class_name": "WanModel",
        "_diffusers_version": "0.33.0",
        "dim": heads * tcfg["attention_head_dim"],
        "eps": tcfg["eps"],
        "ffn_dim": tcfg["ffn_dim"],
        "freq_dim": tcfg["freq_dim"],
        "in_dim": tcfg["in_channels"],
        "model_type": model_type,
        "num_heads": heads,
        "num_layers": tcfg["num_layers"],
        "out_dim": tcfg["out_channels"],
        "text_len": 512,
    }
    extras = {"text_dim": tcfg["text_dim"], "patch_size": list(tcfg["patch_size"]),
              "qk_norm": tcfg.get("qk_norm") is not None,
              "cross_attn_norm": bool(tcfg.get("cross_attn_norm", True)), "window_size": [-1, -1]}
    for k, v in extras.items():
        if v != WANMODEL_DEFAULTS[k]:
            cfg[k] = v
    if "vace_layers" in tcfg:
        # Wan2.1-VACE's config.json (VaceWanModel): model_type "vace", its block pairing and context channels.
        cfg.update(_class_name="VaceWanModel", model_type="vace", vace_layers=list(tcfg["vace_layers"]),
                   vace_in_dim=tcfg["vace_in_channels"])
    return dict(sorted(cfg.items()))


class Pipeline:
    def __init__(self, src: Path):
        self.src = Path(src)
        self.index = json.loads((self.src / "model_index.json").read_text())
        self.experts = ["transformer"] + (["transformer_2"] if self.index.get("transformer_2")
                                          and self.index["transformer_2"][0] else [])
        self.vae_cfg = json.loads((self.src / "vae" / "config.json").read_text())
        self.z_dim = self.vae_cfg["z_dim"]

    def tcfg(self, sub):
        return json.loads((self.src / sub / "config.json").read_text())

    def model_type(self, override=None):
        if override:
            return override
        if len(self.experts) == 1 and self.z_dim == 48:
            return "ti2v"
        c = self.tcfg("transformer")
        if "vace_layers" in c:
            return "vace"
        if c.get("_class_name") == "WanAnimateTransformer3DModel":
            return "animate"
        return "i2v" if c["in_channels"] != c["out_channels"] else "t2v"

    def expert_dirs(self):
        """[(diffusers subfolder, original folder, comfy tag)]"""
        if len(self.experts) == 2:
            return [("transformer", "high_noise_model", "high_noise"),
                    ("transformer_2", "low_noise_model", "low_noise")]
        return [("transformer", "", None)]


def comfy_transformer_name(mt: str, tag, dt: str) -> str:
    if tag is None and mt == "animate":  # Comfy-Org/Wan_2.2_ComfyUI_Repackaged: wan2.2_animate_14B_bf16.safetensors
        return f"wan2.2_animate_14B_{dt}.safetensors"
    if tag is None and mt == "ti2v":
        return f"wan2.2_{mt}_5B_{dt}.safetensors"
    if tag is None:  # one transformer of Wan2.1 (Comfy-Org/Wan_2.1_ComfyUI_repackaged: wan2.1_i2v_480p_14B_fp16...)
        return f"wan2.1_{mt}_14B_{dt}.safetensors"
    return f"wan2.2_{mt}_{tag}_14B_{dt}.safetensors"


# ComfyUI's CLIP vision file for Wan2.1's image models (Comfy-Org/Wan_2.1_ComfyUI_repackaged
# split_files/clip_vision/clip_vision_h.safetensors): transformers' CLIPVisionModelWithProjection names under
# vision_model.* (ComfyUI's clip_vision.py recognises ViT-H by vision_model.encoder.layers.30.layer_norm1.weight), in
# 16 bits. Written from the source's image_encoder folder, names as transformers 4 stored them.
COMFY_CLIP = "clip_vision_h.safetensors"


def comfy_clip_sd(src: Path) -> dict:
    sd = load_diffusers_component(src / "image_encoder")
    return {(k if k.startswith("vision_model.") or k.startswith("visual_projection.") else "vision_model." + k): v
            for k, v in sd.items()}


# Wan's own CLIP (wan/modules/clip.py XLMRobertaCLIP, Wan2.1's models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth,
# loaded by its CLIPModel with load_state_dict): the vision tower under visual.* in VisionTransformer's module names
# (patch_embedding without bias, cls_embedding [1, 1, D], pos_embedding [1, N, D], pre_norm, transformer.N.{norm1,
# attn.to_qkv (q, k, v stacked: its forward views [b, s, 3, n, d]), attn.proj, norm2, mlp.0, mlp.2}, post_norm,
# head [D, out]), the XLM-RoBERTa text tower under textual.* and log_scale. The text tower here is a stand-in with
# XLMRoberta's module names (the loader must skip it, never read it).
WAN_CLIP_PTH = "models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth"
# open_clip's checkpoint of a CLIP (laion/CLIP-ViT-H-14-laion2B-s32B-b79K open_clip_pytorch_model.bin): the vision
# tower under visual.* in open_clip's VisionTransformer names (conv1, class_embedding [D], positional_embedding
# [N, D], ln_pre, transformer.resblocks.N.{ln_1, attn.in_proj_weight / in_proj_bias (nn.MultiheadAttention: q, k, v
# stacked), attn.out_proj, ln_2, mlp.c_fc, mlp.c_proj}, ln_post, proj [D, out]) and the text tower at the top
# level (a stand-in here, with open_clip's names).
OPEN_CLIP_BIN = "open_clip_pytorch_model.bin"


def clip_vision_sd(src: Path) -> dict:
    """The source's image_encoder under transformers 4's names (vision_model.*), without the position_ids buffer."""
    sd = load_diffusers_component(Path(src) / "image_encoder")
    sd = {(k if k.startswith(("vision_model.", "visual_projection.")) else "vision_model." + k): v
          for k, v in sd.items()}
    return {k: v for k, v in sd.items() if not k.endswith("position_ids")}


def _clip_layers(sd: dict) -> int:
    return len({k.split(".")[3] for k in sd if k.startswith("vision_model.encoder.layers.")})


def _stand_in(shapes: dict, seed: int) -> dict:
    g = torch.Generator().manual_seed(seed)
    return {k: torch.randn(shape, generator=g) for k, shape in shapes.items()}


# Per layout: the embeddings' and norms' names (None: ours), the layer prefix, the fused q/k/v's name and the
# other layer modules' names, the projection head's name, the stand-in text tower, and whether the class token and
# position table carry leading unit dims (Wan's).
CLIP_LAYOUTS = {
    "wan": dict(
        top={"embeddings.patch_embedding.weight": "visual.patch_embedding.weight",
             "embeddings.class_embedding": "visual.cls_embedding",
             "embeddings.position_embedding.weight": "visual.pos_embedding",
             "pre_layrnorm": "visual.pre_norm", "post_layernorm": "visual.post_norm"},
        layer="visual.transformer.{}.", qkv="attn.to_qkv.{}",
        modules={"layer_norm1": "norm1", "self_attn.out_proj": "attn.proj", "layer_norm2": "norm2",
                 "mlp.fc1": "mlp.0", "mlp.fc2": "mlp.2"},
        head="visual.head", unit_dims=True, seed=3,
        text={"textual.token_embedding.weight": (11, 8), "textual.type_embedding.weight": (1, 8),
              "textual.pos_embedding.weight": (13, 8), "textual.norm.weight": (8,),
              "textual.blocks.0.attn.q.weight": (8, 8), "textual.blocks.0.ffn.0.weight": (16, 8),
              "textual.head.0.weight": (12, 8), "log_scale": ()}),
    "open_clip": dict(
        top={"embeddings.patch_embedding.weight": "visual.conv1.weight",
             "embeddings.class_embedding": "visual.class_embedding",
             "embeddings.position_embedding.weight": "visual.positional_embedding",
             "pre_layrnorm": "visual.ln_pre", "post_layernorm": "visual.ln_post"},
        layer="visual.transformer.resblocks.{}.", qkv="attn.in_proj_{}",
        modules={"layer_norm1": "ln_1", "self_attn.out_proj": "attn.out_proj", "layer_norm2": "ln_2",
                 "mlp.fc1": "mlp.c_fc", "mlp.fc2": "mlp.c_proj"},
        head="visual.proj", unit_dims=False, seed=4,
        text={"token_embedding.weight": (11, 8), "positional_embedding": (13, 8),
              "transformer.resblocks.0.attn.in_proj_weight": (24, 8), "ln_final.weight": (8,),
              "text_projection": (8, 8), "logit_scale": ()}),
}


def to_clip_layout(sd: dict, names: str) -> dict:
    """A transformers CLIPVisionModel state dict (vision_model.*) in Wan's or open_clip's names (CLIP_LAYOUTS)."""
    L = CLIP_LAYOUTS[names]
    v = "vision_model."
    d = sd[v + "embeddings.class_embedding"].shape[0]
    out = {}
    for ours, theirs in L["top"].items():
        if ours.startswith("embeddings."):
            t = sd[v + ours]
            if L["unit_dims"] and ours != "embeddings.patch_embedding.weight":
                t = t.reshape(1, -1, d)  # [1, 1, D] / [1, N, D]
            out[theirs] = t
        else:  # a LayerNorm
            for p in ("weight", "bias"):
                out[f"{theirs}.{p}"] = sd[f"{v}{ours}.{p}"]
    for i in range(_clip_layers(sd)):
        a, b = f"{v}encoder.layers.{i}.", L["layer"].format(i)
        for p in ("weight", "bias"):
            out[b + L["qkv"].format(p)] = torch.cat([sd[a + f"self_attn.{x}_proj.{p}"] for x in "qkv"], 0)
            for ours, theirs in L["modules"].items():
                out[f"{b}{theirs}.{p}"] = sd[f"{a}{ours}.{p}"]
    proj = sd.get("visual_projection.weight")
    out[L["head"]] = (proj.t().contiguous() if proj is not None
                      else torch.randn(d, d, generator=torch.Generator().manual_seed(L["seed"])))
    out.update(_stand_in(L["text"], L["seed"]))
    return out


def to_wan_clip(sd: dict) -> dict:
    return to_clip_layout(sd, "wan")


def to_open_clip(sd: dict) -> dict:
    return to_clip_layout(sd, "open_clip")


def write_clip(src, out, names, dtype="keep"):
    """One CLIP file of the source's image_encoder in Wan's (WAN_CLIP_PTH) or open_clip's (OPEN_CLIP_BIN) layout."""
    sd = clip_vision_sd(src)
    sd = _cast(to_wan_clip(sd) if names == "wan" else to_open_clip(sd), None if dtype == "keep" else DTYPES[dtype])
    with _Staging(out) as tmp:
        torch.save(sd, str(tmp / (WAN_CLIP_PTH if names == "wan" else OPEN_CLIP_BIN)))


def comfy_t5_name(dt: str) -> str:
    return "umt5_xxl_fp8_e4m3fn_scaled.safetensors" if dt == "fp8_scaled" else f"umt5_xxl_{dt}.safetensors"


def comfy_vae_name(z_dim: int) -> str:
    return "wan2.2_vae.safetensors" if z_dim == 48 else "wan_2.1_vae.safetensors"


def original_vae_name(z_dim: int) -> str:
    return "Wan2.2_VAE.pth" if z_dim == 48 else "Wan2.1_VAE.pth"


T5_PTH = "models_t5_umt5-xxl-enc-bf16.pth"


def write_original(src, out, dtype="keep", shard_bytes=65536, model_type=None):
    p = Pipeline(src)
    dt = None if dtype == "keep" else DTYPES[dtype]
    mt = p.model_type(model_type)
    with _Staging(out) as tmp:
        for sub, folder, _ in p.expert_dirs():
            d = tmp / folder if folder else tmp
            d.mkdir(parents=True, exist_ok=True)
            sd = _cast(to_original_transformer(load_diffusers_component(p.src / sub)), dt)
            save_sharded(sd, d, shard_bytes)
            (d / "config.json").write_text(json.dumps(wan_config(p.tcfg(sub), mt), indent=2) + "\n")
        t5 = _cast(to_wan_t5(load_diffusers_component(p.src / "text_encoder")), dt)
        torch.save(t5, str(tmp / T5_PTH))
        vae = _cast(to_original_vae(load_diffusers_component(p.src / "vae"), p.z_dim), dt)
        torch.save(vae, str(tmp / original_vae_name(p.z_dim)))
        (tmp / "google").mkdir()
        shutil.copytree(p.src / "tokenizer", tmp / "google" / "umt5-xxl")
        if (p.src / "image_encoder").is_dir():
            torch.save(_cast(to_wan_clip(clip_vision_sd(p.src)), dt), str(tmp / WAN_CLIP_PTH))


def write_comfy(src, out, dtype, prefix="model.diffusion_model.", spiece=False,
                new_style=False, input_scale=False, fp8_rest="fp16", fp8_keys=None, fp8_scale="tensor"):
    p = Pipeline(src)
    mt = p.model_type()
    prefix = "" if prefix in (None, "none", "") else prefix
    fp8 = dtype == "fp8_scaled"
    rest = DTYPES[fp8_rest]
    meta = {"format": "pt"}
    with _Staging(out) as tmp:
        for sub, _, tag in p.expert_dirs():
            sd = to_original_transformer(load_diffusers_component(p.src / sub))
            if fp8:
                keys = TRANSFORMER_FP8_RE if fp8_keys is None else re.compile(fp8_keys)
                sd = quantize_fp8_scaled(sd, keys, rest, new_style, input_scale, fp8_scale == "row")
            else:
                sd = _cast(sd, DTYPES[dtype])
            sd = {prefix + k: v.contiguous() for k, v in sd.items()}
            if fp8 and not new_style:
                sd[prefix + "scaled_fp8"] = torch.empty(0, dtype=torch.float8_e4m3fn)
            save_file(sd, str(tmp / comfy_transformer_name(mt, tag, dtype)), metadata=meta)
        t5 = t5_comfy_sd(load_diffusers_component(p.src / "text_encoder"))
        if fp8:
            t5 = quantize_fp8_scaled(t5, T5_FP8_RE, rest, new_style, input_scale)
            if not new_style:
                t5["scaled_fp8"] = torch.empty(0, dtype=torch.float8_e4m3fn)
        else:
            t5 = _cast(t5, DTYPES[dtype])
        if spiece:
            t5["spiece_model"] = torch.frombuffer(
                bytearray((p.src / "tokenizer" / "spiece.model").read_bytes()), dtype=torch.uint8).clone()
        save_file({k: v.contiguous() for k, v in t5.items()}, str(tmp / comfy_t5_name(dtype)), metadata=meta)
        vdt = torch.bfloat16 if fp8 else DTYPES[dtype]
        vae = _cast(to_original_vae(load_diffusers_component(p.src / "vae"), p.z_dim), vdt)
        save_file(vae, str(tmp / comfy_vae_name(p.z_dim)), metadata=meta)
        if (p.src / "image_encoder").is_dir():
            clip = _cast(comfy_clip_sd(p.src), torch.float16 if fp8 else DTYPES[dtype])
            save_file({k: v.contiguous() for k, v in clip.items()}, str(tmp / COMFY_CLIP), metadata=meta)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sp = ap.add_subparsers(dest="layout", required=True)
    o = sp.add_parser("original")
    o.add_argument("src")
    o.add_argument("out")
    o.add_argument("--dtype", default="keep", choices=["keep", "bf16", "fp16", "fp32"])
    o.add_argument("--shard-bytes", type=int, default=65536)
    o.add_argument("--model-type", choices=["t2v", "i2v", "ti2v", "vace", "animate"])
    c = sp.add_parser("comfy")
    c.add_argument("src")
    c.add_argument("out")
    c.add_argument("--dtype", required=True, choices=["fp16", "bf16", "fp32", "fp8_scaled"])
    c.add_argument("--prefix", default="model.diffusion_model.")
    c.add_argument("--spiece", action="store_true")
    c.add_argument("--new-style", action="store_true")
    c.add_argument("--input-scale", action="store_true")
    c.add_argument("--fp8-rest", default="fp16", choices=["fp16", "bf16", "fp32"])
    c.add_argument("--fp8-keys", help="regex over the original transformer names of the weights written in "
                   "float8 (default: every 2-D Linear weight of the blocks, as ComfyUI's files)")
    c.add_argument("--fp8-scale", default="tensor", choices=["tensor", "row"],
                   help="one scale per tensor (ComfyUI's files), or one per output row ([rows] scale_weight)")
    k = sp.add_parser("clip")
    k.add_argument("src")
    k.add_argument("out")
    k.add_argument("--names", required=True, choices=["wan", "open_clip"])
    k.add_argument("--dtype", default="keep", choices=["keep", "bf16", "fp16", "fp32"])
    a = ap.parse_args(argv)
    if a.layout == "clip":
        write_clip(a.src, a.out, a.names, a.dtype)
    elif a.layout == "original":
        write_original(a.src, a.out, a.dtype, a.shard_bytes, a.model_type)
    else:
        write_comfy(a.src, a.out, a.dtype, a.prefix, a.spiece, a.new_style, a.input_scale, a.fp8_rest,
                    a.fp8_keys, a.fp8_scale)
    return 0


if __name__ == "__main__":
    sys.exit(main())
