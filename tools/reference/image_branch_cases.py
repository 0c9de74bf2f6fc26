#!/usr/bin/env python3
"""Writes the Wan2.1 CLIP image branch cases that tests/models/wan_transformer_test.cpp (ImageBranch) reads, into
OUT_DIR: diffusers' WanTransformer3DModel with image_dim / added_kv_proj_dim set, as Wan2.1's image-to-video
(i2v: one image) and first-last-frame (flf2v: pos_embed_seq_len, two images as one row) transformers are, at a
tiny size with random weights, and its output on random inputs.

OUT_DIR/<case>/transformer/  save_pretrained (config.json, diffusion_pytorch_model.safetensors)
OUT_DIR/<case>/io.safetensors  hidden_states [1, 36, 2, 4, 6], timestep [1], encoder_hidden_states [1, 512, 16]
                               (512 text tokens: diffusers finds the image tokens as the first len - 512),
                               encoder_hidden_states_image [I, 5, 32] (I = 1, or 2 for flf2v), image_embeds
                               (condition_embedder.image_embedder's output), output [1, 16, 2, 4, 6]; float32

Run it in the reference environment (tools/reference/setup.sh):
  tools/reference/.venv/bin/python tools/reference/image_branch_cases.py OUT_DIR
"""

import os
import sys

import torch
from diffusers import WanTransformer3DModel
from safetensors.torch import save_file

IMAGE_TOKENS = 5  # per image (CLIP's 257 at full size)


def case(out, name, pos_embed):
    torch.manual_seed(3 if pos_embed else 2)
    images = 2 if pos_embed else 1
    model = WanTransformer3DModel(patch_size=(1, 2, 2), num_attention_heads=2, attention_head_dim=12, in_channels=36,
                                  out_channels=16, text_dim=16, freq_dim=32, ffn_dim=40, num_layers=2,
                                  cross_attn_norm=True, qk_norm="rms_norm_across_heads", eps=1e-6, image_dim=32,
                                  added_kv_proj_dim=24, rope_max_seq_len=64,
                                  pos_embed_seq_len=2 * IMAGE_TOKENS if pos_embed else None).eval()
    # diffusers initialises norms to 1/0, pos_embed and scale_shift_table to 0: randomise every parameter so that
    # each one moves the output.
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if pname.endswith("norm_added_k.weight") or pname.endswith("norm1.weight") or pname.endswith("norm2.weight"):
                p.copy_(1 + 0.2 * torch.randn_like(p))
            elif "pos_embed" in pname or "scale_shift_table" in pname or pname.endswith(".bias"):
                p.copy_(0.3 * torch.randn_like(p))
    d = os.path.join(out, name)
    model.save_pretrained(os.path.join(d, "transformer"))
    io = {
        "hidden_states": torch.randn(1, 36, 2, 4, 6),
        "timestep": torch.tensor([731.0]),
        "encoder_hidden_states": torch.randn(1, 512, 16),
        "encoder_hidden_states_image": torch.randn(images, IMAGE_TOKENS, 32),
    }
    with torch.no_grad():
        io["image_embeds"] = model.condition_embedder.image_embedder(io["encoder_hidden_states_image"])
        io["output"] = model(hidden_states=io["hidden_states"], timestep=io["timestep"],
                             encoder_hidden_states=io["encoder_hidden_states"],
                             encoder_hidden_states_image=io["encoder_hidden_states_image"], return_dict=False)[0]
        # Without the image branch's contribution the output must differ (the test's comparison can fail).
        saved_v = model.blocks[0].attn2.add_v_proj.weight.clone()
        model.blocks[0].attn2.add_v_proj.weight.zero_()
        io["output_without_block0_image_values"] = model(
            hidden_states=io["hidden_states"], timestep=io["timestep"],
            encoder_hidden_states=io["encoder_hidden_states"],
            encoder_hidden_states_image=io["encoder_hidden_states_image"], return_dict=False)[0]
        model.blocks[0].attn2.add_v_proj.weight.copy_(saved_v)
    save_file({k: v.contiguous() for k, v in io.items()}, os.path.join(d, "io.safetensors"))


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    case(out, "i2v", pos_embed=False)
    case(out, "flf2v", pos_embed=True)
    print(f"image branch cases in {out}")


if __name__ == "__main__":
    main()
