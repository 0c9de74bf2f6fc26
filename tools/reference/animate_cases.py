#!/usr/bin/env python3
"""Writes the Wan2.2-Animate transformer cases tests/models/wan_animate_test.cpp reads, into OUT_DIR: diffusers'
WanAnimateTransformer3DModel at a tiny size with random weights (every module of the published model: the CLIP
image branch, pose patch embedding, motion encoder, face encoder and face adapters), and its outputs on random
inputs.

OUT_DIR/<case>/transformer/    save_pretrained (config.json, diffusion_pytorch_model.safetensors)
OUT_DIR/<case>/io.safetensors  hidden_states [B, 36, 4, 4, 6], timestep [B], encoder_hidden_states [B, 512, 16]
                               (512 text tokens: diffusers finds the image tokens as the first L - 512 of the
                               context), encoder_hidden_states_image [1, 5, 20] (one image for every row),
                               pose_hidden_states [B, 16, 3, 4, 6], face_pixel_values [B, 3, 9, S, S];
                               motion [B * 9, 12] (the motion encoder's vectors), face_tokens [B, 3, 3, 24] (the
                               face encoder's), output [B, 16, 4, 4, 6]; float32

Cases: "batch2" (two rows, the second's face crops all -1 as the pipeline's unconditional branch; 4 blocks, a face
adapter after blocks 0 and 2; the motion encoder 3 crops at a time, so its last batch is partial), "size32" (one
row, a 32-pixel motion encoder of diffusers' channel table's shape, 6 blocks, adapters after 0 and 3).

Run it in the reference environment (tools/reference/setup.sh):
  tools/reference/.venv/bin/python tools/reference/animate_cases.py OUT_DIR
"""

import os
import sys

import torch
from diffusers import WanAnimateTransformer3DModel
from safetensors.torch import save_file


def case(out, name, batch, layers, inject, size, channels, motion_batch):
    torch.manual_seed(23 + layers)
    model = WanAnimateTransformer3DModel(
        patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12, in_channels=36, latent_channels=16,
        out_channels=16, text_dim=16, freq_dim=32, ffn_dim=40, num_layers=layers, cross_attn_norm=True,
        qk_norm="rms_norm_across_heads", eps=1e-6, image_dim=20, added_kv_proj_dim=24, rope_max_seq_len=64,
        motion_encoder_channel_sizes=channels, motion_encoder_size=size, motion_style_dim=10, motion_dim=4,
        motion_encoder_dim=12, face_encoder_hidden_dim=8, face_encoder_num_heads=2,
        inject_face_latents_blocks=inject, motion_encoder_batch_size=motion_batch).eval()
    # diffusers initialises norms to 1, biases, modulation tables and the face padding token to 0: move them.
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if pname.endswith("norm2.weight") or pname.endswith("norm_q.weight") or pname.endswith("norm_k.weight") \
                    or pname.endswith("norm_added_k.weight") or pname.endswith("norm1.weight"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif "scale_shift_table" in pname or pname.endswith(".bias") or "padding_tokens" in pname:
                p.copy_(0.3 * torch.randn_like(p))
    d = os.path.join(out, name)
    model.save_pretrained(os.path.join(d, "transformer"))
    face = torch.rand(batch, 3, 9, size, size) * 2 - 1
    if batch == 2:
        face[1] = -1.0  # the pipeline's unconditional face: face * 0 - 1
    io = {
        "hidden_states": torch.randn(batch, 36, 4, 4, 6),
        "timestep": torch.tensor([731.0, 731.0][:batch]),
        "encoder_hidden_states": torch.randn(batch, 512, 16),
        "encoder_hidden_states_image": torch.randn(1, 5, 20),
        "pose_hidden_states": torch.randn(batch, 16, 3, 4, 6),
        "face_pixel_values": face,
    }
    with torch.no_grad():
        crops = face.permute(0, 2, 1, 3, 4).reshape(-1, 3, size, size)
        io["motion"] = torch.cat([model.motion_encoder(c) for c in torch.split(crops, motion_batch)])
        io["face_tokens"] = model.face_encoder(io["motion"].view(batch, 9, -1))
        io["output"] = model(hidden_states=io["hidden_states"], timestep=io["timestep"],
                             encoder_hidden_states=io["encoder_hidden_states"],
                             encoder_hidden_states_image=io["encoder_hidden_states_image"].repeat(batch, 1, 1),
                             pose_hidden_states=io["pose_hidden_states"], face_pixel_values=face,
                             return_dict=False)[0]
    save_file({k: v.contiguous() for k, v in io.items()}, os.path.join(d, "io.safetensors"))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    case(out, "batch2", 2, 4, 2, 16, {"4": 8, "8": 12, "16": 6}, 3)
    case(out, "size32", 1, 6, 3, 32, {"4": 16, "8": 16, "16": 8, "32": 4}, 8)
    print(f"animate_cases: {out}")


if __name__ == "__main__":
    main()
